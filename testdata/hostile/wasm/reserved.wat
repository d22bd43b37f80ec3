;; A module exporting a name with the prefix the host reserves for what it adds to
;; every module ("scripthost:"): refused at Load.
(module
  (import "scripthost" "return_value" (func $return_value (param i32 i32)))
  (memory (export "memory") 1)
  (global (export "scripthost:refused_pages") i64 (i64.const 0))
  (data (i32.const 1024) "{}")
  (func (export "scripthost_abi_version") (result i32) (i32.const 1))
  (func (export "scripthost_describe") (call $return_value (i32.const 1024) (i32.const 2)))
)
