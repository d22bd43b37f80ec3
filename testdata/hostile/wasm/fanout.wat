;; Exponential recursion without a loop instruction: "fib" computes fib(60), about
;; 10^12 calls at a shallow depth. Loop heads are where wazero checks for a closed module;
;; the host must still stop this at the timeout.
(module
  (import "scripthost" "return_value" (func $return_value (param i32 i32)))
  (memory (export "memory") 1)
  ;; def: offset 1024, length 39
  (data (i32.const 1024) "{\"producers\":{\"fib\":{\"handler\":\"fib\"}}}")
  (func (export "scripthost_abi_version") (result i32) (i32.const 1))
  (func (export "scripthost_describe") (call $return_value (i32.const 1024) (i32.const 39)))

  (func $fib (param $n i32) (result i32)
    (if (result i32) (i32.lt_u (local.get $n) (i32.const 2))
      (then (local.get $n))
      (else (i32.add
        (call $fib (i32.sub (local.get $n) (i32.const 1)))
        (call $fib (i32.sub (local.get $n) (i32.const 2)))))))
  (func (export "fib")
    (drop (call $fib (i32.const 60))))
)
