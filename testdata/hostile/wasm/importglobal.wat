;; An imported global. The host provides none: Load must refuse the module.
(module
  (import "scripthost" "return_value" (func $return_value (param i32 i32)))
  (import "env" "g" (global $g i32))
  (memory (export "memory") 1)
  ;; def: offset 1024, length 35
  (data (i32.const 1024) "{\"producers\":{\"h\":{\"handler\":\"h\"}}}")
  (func (export "scripthost_abi_version") (result i32) (i32.const 1))
  (func (export "scripthost_describe") (call $return_value (i32.const 1024) (i32.const 35)))

  (func (export "h"))
)
