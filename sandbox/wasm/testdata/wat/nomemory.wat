;; A guest without a memory, with a loop: the rewrite's check function then has no
;; memory.grow to leave native code with, and the engine refuses the module for its
;; missing memory, saying so, rather than failing to compile the rewrite.
(module
  (import "scripthost" "return_value" (func $return_value (param i32 i32)))
  (func (export "scripthost_abi_version") (result i32) (i32.const 1))
  (func (export "scripthost_describe"))
  (func (export "spin") (loop $l (br $l))))
