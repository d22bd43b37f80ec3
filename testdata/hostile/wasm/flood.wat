;; Tool-call flood: "flood" calls Echo.say forever, ignoring errors. The host must
;; stop it at MaxToolCalls with a tool_calls limit error.
(module
  (import "scripthost" "return_value" (func $return_value (param i32 i32)))
  (import "scripthost" "tool_call" (func $tool_call (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  ;; def: offset 1024, length 43
  (data (i32.const 1024) "{\"producers\":{\"flood\":{\"handler\":\"flood\"}}}")
  ;; name: offset 1072, length 8
  (data (i32.const 1072) "Echo.say")
  ;; in: offset 1080, length 2
  (data (i32.const 1080) "{}")
  (func (export "scripthost_abi_version") (result i32) (i32.const 1))
  (func (export "scripthost_describe") (call $return_value (i32.const 1024) (i32.const 43)))

  (func (export "flood")
    (loop $l
      (drop (call $tool_call (i32.const 1072) (i32.const 8) (i32.const 1080) (i32.const 2)))
      (br $l)))
)
