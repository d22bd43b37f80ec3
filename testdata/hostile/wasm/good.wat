;; A well-behaved module: "echo" returns __state__ (null when undefined), "hello"
;; logs a line and returns "hello".
(module
  (import "scripthost" "return_value" (func $return_value (param i32 i32)))
  (import "scripthost" "input_len" (func $input_len (param i32) (result i32)))
  (import "scripthost" "input_read" (func $input_read (param i32 i32 i32) (result i32)))
  (import "scripthost" "log" (func $log (param i32 i32 i32)))
  (memory (export "memory") 1)
  ;; def: offset 1024, length 69
  (data (i32.const 1024) "{\"producers\":{\"echo\":{\"handler\":\"echo\"},\"hello\":{\"handler\":\"hello\"}}}")
  ;; null: offset 1096, length 4
  (data (i32.const 1096) "null")
  ;; hello: offset 1104, length 5
  (data (i32.const 1104) "hello")
  ;; hi: offset 1112, length 7
  (data (i32.const 1112) "\"hello\"")
  (func (export "scripthost_abi_version") (result i32) (i32.const 1))
  (func (export "scripthost_describe") (call $return_value (i32.const 1024) (i32.const 69)))

  (func (export "echo")
    (local $n i32)
    (local.set $n (call $input_len (i32.const 0)))
    (if (i32.lt_s (local.get $n) (i32.const 0))
      (then (call $return_value (i32.const 1096) (i32.const 4)) (return)))
    (drop (call $input_read (i32.const 0) (i32.const 8192) (local.get $n)))
    (call $return_value (i32.const 8192) (local.get $n)))
  (func (export "hello")
    (call $log (i32.const 0) (i32.const 1104) (i32.const 5))
    (call $return_value (i32.const 1112) (i32.const 7)))
)
