;; Bad pointers and lengths passed to the host. Each handler must end with a
;; sandbox_violation logic error naming the function and the range; the host must not
;; panic or read outside guest memory.
(module
  (import "scripthost" "return_value" (func $return_value (param i32 i32)))
  (import "scripthost" "log" (func $log (param i32 i32 i32)))
  (import "scripthost" "input_read" (func $input_read (param i32 i32 i32) (result i32)))
  (import "scripthost" "tool_call" (func $tool_call (param i32 i32 i32 i32) (result i32)))
  (import "scripthost" "result_read" (func $result_read (param i32 i32) (result i32)))
  (memory (export "memory") 1)
  ;; def: offset 1024, length 305
  (data (i32.const 1024) "{\"producers\":{\"oob\":{\"handler\":\"oob\"},\"wrap\":{\"handler\":\"wrap\"},\"huge_log\":{\"handler\":\"huge_log\"},\"huge_read\":{\"handler\":\"huge_read\"},\"tool_wrap\":{\"handler\":\"tool_wrap\"},\"result_oob\":{\"handler\":\"result_oob\"},\"bad_json\":{\"handler\":\"bad_json\"},\"bad_level\":{\"handler\":\"bad_level\"},\"edge\":{\"handler\":\"edge\"}}}")
  ;; x: offset 1336, length 3
  (data (i32.const 1336) "\"x\"")
  ;; name: offset 1344, length 8
  (data (i32.const 1344) "Echo.say")
  (func (export "scripthost_abi_version") (result i32) (i32.const 1))
  (func (export "scripthost_describe") (call $return_value (i32.const 1024) (i32.const 305)))

  ;; past the end of the 64 KiB memory
  (func (export "oob")
    (call $return_value (i32.const 65530) (i32.const 16)))
  ;; ptr+len wraps around 2^32 (0xffffff00 + 0x200)
  (func (export "wrap")
    (call $return_value (i32.const 0xffffff00) (i32.const 0x200)))
  ;; a 4 GiB length
  (func (export "huge_log")
    (call $log (i32.const 0) (i32.const 0) (i32.const -1)))
  ;; input_read into a buffer larger than memory
  (func (export "huge_read")
    (drop (call $input_read (i32.const 0) (i32.const 16) (i32.const 0x7fffffff))))
  ;; tool name range wraps
  (func (export "tool_wrap")
    (drop (call $tool_call (i32.const -1) (i32.const 2) (i32.const 1336) (i32.const 3))))
  ;; result_read past the end of memory
  (func (export "result_oob")
    (drop (call $tool_call (i32.const 1344) (i32.const 8) (i32.const 1336) (i32.const 3)))
    (drop (call $result_read (i32.const 65535) (i32.const 2))))
  ;; a value that is not JSON
  (func (export "bad_json")
    (call $return_value (i32.const 1344) (i32.const 8)))
  ;; an unknown log level
  (func (export "bad_level")
    (call $log (i32.const 9) (i32.const 1336) (i32.const 3)))
  ;; the last byte of memory is in bounds: returns "x" written at 65533
  (func (export "edge")
    (i32.store8 (i32.const 65533) (i32.const 34))
    (i32.store8 (i32.const 65534) (i32.const 120))
    (i32.store8 (i32.const 65535) (i32.const 34))
    (call $return_value (i32.const 65533) (i32.const 3)))
)
