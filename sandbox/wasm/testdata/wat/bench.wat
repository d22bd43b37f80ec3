;; Benchmark guest. "calls" makes 1000 tool calls of Echo.say with input {} and reads
;; each result; "echo" returns __state__; "noop" does nothing.
(module
  (import "scripthost" "return_value" (func $return_value (param i32 i32)))
  (import "scripthost" "input_len" (func $input_len (param i32) (result i32)))
  (import "scripthost" "input_read" (func $input_read (param i32 i32 i32) (result i32)))
  (import "scripthost" "tool_call" (func $tool_call (param i32 i32 i32 i32) (result i32)))
  (import "scripthost" "result_read" (func $result_read (param i32 i32) (result i32)))
  (memory (export "memory") 1)
  ;; definition: offset 1024, length 38
  (data (i32.const 1024) "{\22producers\22:{\22p\22:{\22handler\22:\22echo\22}}}")
  ;; "Echo.say": offset 1100, length 8; "{}": offset 1110, length 2; "null": offset 1120, length 4
  (data (i32.const 1100) "Echo.say")
  (data (i32.const 1110) "{}")
  (data (i32.const 1120) "null")
  (func (export "scripthost_abi_version") (result i32) (i32.const 1))
  (func (export "scripthost_describe") (call $return_value (i32.const 1024) (i32.const 38)))
  (func (export "noop"))
  (func (export "calls")
    (local $i i32)
    (loop $l
      (drop (call $tool_call (i32.const 1100) (i32.const 8) (i32.const 1110) (i32.const 2)))
      (drop (call $result_read (i32.const 2048) (i32.const 64)))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br_if $l (i32.lt_u (local.get $i) (i32.const 1000)))))
  (func (export "echo")
    (local $n i32)
    (local.set $n (call $input_len (i32.const 0)))
    (if (i32.lt_s (local.get $n) (i32.const 0))
      (then (call $return_value (i32.const 1120) (i32.const 4)) (return)))
    (drop (call $input_read (i32.const 0) (i32.const 8192) (local.get $n)))
    (call $return_value (i32.const 8192) (local.get $n)))
)
