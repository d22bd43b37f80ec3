;; fail(ptr, len) with bad lengths. "big" passes a valid range of 64 KiB + 1 bytes: a
;; limit error, never 64 KiB of raw memory as the run's error. "oob_big" passes a range
;; that leaves the 128 KiB memory: a sandbox violation, checked before the size.
(module
  (import "scripthost" "return_value" (func $return_value (param i32 i32)))
  (import "scripthost" "fail" (func $fail (param i32 i32)))
  (memory (export "memory") 2)
  ;; def: offset 1024, length 39
  (data (i32.const 1024) "{\"producers\":{\"big\":{\"handler\":\"big\"}}}")
  (func (export "scripthost_abi_version") (result i32) (i32.const 1))
  (func (export "scripthost_describe") (call $return_value (i32.const 1024) (i32.const 39)))

  (func (export "big")
    (call $fail (i32.const 0) (i32.const 65537)))
  (func (export "oob_big")
    (call $fail (i32.const 0x10000) (i32.const 0x20000)))
)
