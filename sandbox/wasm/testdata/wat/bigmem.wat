;; Reset benchmark guest: a 16 MiB memory (256 pages), of which "touch" writes one
;; word in each of 8 pages 2 MiB apart and returns null; _initialize writes a mark in
;; the first and the last page, with no host calls, so the engine keeps its instances.
(module
  (import "scripthost" "return_value" (func $return_value (param i32 i32)))
  (memory (export "memory") 256)
  ;; definition: offset 1024, length 39; "null": offset 1100, length 4
  (data (i32.const 1024) "{\22producers\22:{\22p\22:{\22handler\22:\22touch\22}}}")
  (data (i32.const 1100) "null")
  (global $n (mut i32) (i32.const 0))
  (func (export "scripthost_abi_version") (result i32) (i32.const 1))
  (func (export "scripthost_describe") (call $return_value (i32.const 1024) (i32.const 39)))
  (func (export "_initialize")
    (i32.store (i32.const 4096) (i32.const 1))
    (i32.store (i32.const 16777212) (i32.const 1)))
  (func (export "touch") (local $p i32)
    (global.set $n (i32.add (global.get $n) (i32.const 1)))
    (local.set $p (i32.const 8192))
    (loop $l
      (i32.store (local.get $p) (global.get $n))
      (local.set $p (i32.add (local.get $p) (i32.const 2097152)))
      (br_if $l (i32.lt_u (local.get $p) (i32.const 16777216))))
    (call $return_value (i32.const 1100) (i32.const 4))))
