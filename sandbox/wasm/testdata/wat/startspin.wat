;; A start section that never ends: the engine runs it after instantiation, under the
;; invocation's timeout, so loading the module fails with a timeout instead of hanging.
(module
  (import "scripthost" "return_value" (func $return_value (param i32 i32)))
  (memory (export "memory") 1)
  (data (i32.const 1024) "{\"producers\":{\"p\":{\"handler\":\"p\"}}}")
  (func $start (loop $l (br $l)))
  (start $start)
  (func (export "scripthost_abi_version") (result i32) (i32.const 1))
  (func (export "scripthost_describe") (call $return_value (i32.const 1024) (i32.const 35)))
  (func (export "p")))
