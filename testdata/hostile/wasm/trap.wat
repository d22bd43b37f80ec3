;; Traps: "unreachable", "divzero" and "oob_load" each trap; the host reports a
;; logic error naming the function and the trap. "recurse" calls itself without bound
;; and must end with a stack limit error.
(module
  (import "scripthost" "return_value" (func $return_value (param i32 i32)))
  (memory (export "memory") 1)
  ;; def: offset 1024, length 153
  (data (i32.const 1024) "{\"producers\":{\"unreachable\":{\"handler\":\"unreachable\"},\"divzero\":{\"handler\":\"divzero\"},\"oob_load\":{\"handler\":\"oob_load\"},\"recurse\":{\"handler\":\"recurse\"}}}")
  (func (export "scripthost_abi_version") (result i32) (i32.const 1))
  (func (export "scripthost_describe") (call $return_value (i32.const 1024) (i32.const 153)))

  (func (export "unreachable")
    unreachable)
  (func (export "divzero")
    (drop (i32.div_s (i32.const 1) (i32.const 0))))
  (func (export "oob_load")
    (drop (i32.load (i32.const 70000))))
  (func $recurse (export "recurse")
    (call $recurse))
)
