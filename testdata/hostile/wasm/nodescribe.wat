;; Missing export: no scripthost_describe. Load must refuse it.
(module
  (import "scripthost" "return_value" (func $return_value (param i32 i32)))
  (memory (export "memory") 1)
  ;; def: offset 1024, length 35
  (data (i32.const 1024) "{\"producers\":{\"h\":{\"handler\":\"h\"}}}")
  (func (export "scripthost_abi_version") (result i32) (i32.const 1))

  (func (export "h"))
)
