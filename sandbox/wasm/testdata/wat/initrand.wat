;; A guest whose _initialize reads WASI random_get and keeps the bytes, as a Go
;; runtime seeds itself: its instances are not reused, and "seed" returns different
;; bytes in every invocation (the same for the same deterministic seed).
(module
  (import "wasi_snapshot_preview1" "random_get" (func $random_get (param i32 i32) (result i32)))
  (import "scripthost" "return_value" (func $return_value (param i32 i32)))
  (memory (export "memory") 1)
  ;; def: offset 1024, length 41
  (data (i32.const 1024) "{\"producers\":{\"seed\":{\"handler\":\"seed\"}}}")
  (func (export "scripthost_abi_version") (result i32) (i32.const 1))
  (func (export "scripthost_describe") (call $return_value (i32.const 1024) (i32.const 41)))
  (func (export "_initialize")
    (drop (call $random_get (i32.const 2001) (i32.const 8))))
  (func (export "seed") (local $i i32)
    ;; "0123456789": 8 random bytes as digits, in a JSON string
    (i32.store8 (i32.const 2000) (i32.const 34))
    (loop $l
      (i32.store8 (i32.add (i32.const 2001) (local.get $i))
        (i32.add (i32.const 48) (i32.rem_u (i32.load8_u (i32.add (i32.const 2001) (local.get $i))) (i32.const 10))))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br_if $l (i32.lt_u (local.get $i) (i32.const 8))))
    (i32.store8 (i32.const 2009) (i32.const 34))
    (call $return_value (i32.const 2000) (i32.const 10)))
)
