;; Endless loop: "spin" never returns and calls nothing. The host must stop it at
;; the invocation timeout while other goroutines (and the GC) keep running.
(module
  (import "scripthost" "return_value" (func $return_value (param i32 i32)))
  (memory (export "memory") 1)
  ;; def: offset 1024, length 41
  (data (i32.const 1024) "{\"producers\":{\"spin\":{\"handler\":\"spin\"}}}")
  (func (export "scripthost_abi_version") (result i32) (i32.const 1))
  (func (export "scripthost_describe") (call $return_value (i32.const 1024) (i32.const 41)))

  (func (export "spin")
    (loop $l (br $l)))
)
