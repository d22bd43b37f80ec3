;; The fuzz target's guest: "call" reads argument 0, a JSON string of 40 hex digits
;; (op, a, b, c, d as 8-digit numbers), and calls one host function with those raw
;; values: 0 input_len(a), 1 input_read(a, b, c), 2 tool_call(a, b, c, d),
;; 3 result_read(a, b), 4 log(a, b, c), 5 return_value(a, b), 6 fail(a, b),
;; 7 result_len(). Whatever the values, the host must answer with a result or a
;; classified error, never a panic or a read outside the guest memory.
(module
  (import "scripthost" "input_len" (func $input_len (param i32) (result i32)))
  (import "scripthost" "input_read" (func $input_read (param i32 i32 i32) (result i32)))
  (import "scripthost" "tool_call" (func $tool_call (param i32 i32 i32 i32) (result i32)))
  (import "scripthost" "result_len" (func $result_len (result i32)))
  (import "scripthost" "result_read" (func $result_read (param i32 i32) (result i32)))
  (import "scripthost" "log" (func $log (param i32 i32 i32)))
  (import "scripthost" "return_value" (func $return_value (param i32 i32)))
  (import "scripthost" "fail" (func $fail (param i32 i32)))
  (memory (export "memory") 1)
  ;; def: offset 1024, length 41
  (data (i32.const 1024) "{\"producers\":{\"call\":{\"handler\":\"call\"}}}")
  ;; name: offset 1100, length 8
  (data (i32.const 1100) "Echo.say")
  (func (export "scripthost_abi_version") (result i32) (i32.const 1))
  (func (export "scripthost_describe") (call $return_value (i32.const 1024) (i32.const 41)))

  (func $hex (param $c i32) (result i32)
    (if (result i32) (i32.le_u (local.get $c) (i32.const 57))
      (then (i32.sub (local.get $c) (i32.const 48)))
      (else (i32.sub (local.get $c) (i32.const 87)))))

  ;; u32 decodes the 8 hex digits at off.
  (func $u32 (param $off i32) (result i32)
    (local $i i32) (local $v i32)
    (loop $l
      (local.set $v (i32.or (i32.shl (local.get $v) (i32.const 4))
        (call $hex (i32.load8_u (i32.add (local.get $off) (local.get $i))))))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br_if $l (i32.lt_u (local.get $i) (i32.const 8))))
    (local.get $v))

  (func (export "call")
    (local $a i32) (local $b i32) (local $c i32) (local $d i32)
    ;; the JSON text "\"…\"": digits start at offset 1
    (drop (call $input_read (i32.const 16) (i32.const 0) (i32.const 64)))
    (local.set $a (call $u32 (i32.const 9)))
    (local.set $b (call $u32 (i32.const 17)))
    (local.set $c (call $u32 (i32.const 25)))
    (local.set $d (call $u32 (i32.const 33)))
    (block $done
      (block $7 (block $6 (block $5 (block $4 (block $3 (block $2 (block $1 (block $0
        (br_table $0 $1 $2 $3 $4 $5 $6 $7 (i32.and (call $u32 (i32.const 1)) (i32.const 7))))
        (drop (call $input_len (local.get $a))) (br $done))
        (drop (call $input_read (local.get $a) (local.get $b) (local.get $c))) (br $done))
        (drop (call $tool_call (local.get $a) (local.get $b) (local.get $c) (local.get $d))) (br $done))
        (drop (call $result_read (local.get $a) (local.get $b))) (br $done))
        (call $log (local.get $a) (local.get $b) (local.get $c)) (br $done))
        (call $return_value (local.get $a) (local.get $b)) (br $done))
        (call $fail (local.get $a) (local.get $b)) (br $done))
      (drop (call $result_len)))
  )
)
