;; memory.grow bombs. Each of these must end with a memory limit error, not a bare trap:
;; "bomb" grows by 16 pages until memory.grow fails, then traps; "huge" asks for 2 GiB at
;; once, then traps; "past4g" asks for 65536 more pages (past the 4 GiB a 32-bit memory
;; can address, which wazero refuses itself) and "maxgrow" for 0xffffffff pages, then
;; trap; "nested" is refused deep inside blocks and a callee, then divides by zero;
;; "failafter" is refused, then reports an error through fail, as an allocator's
;; "out of memory" does.
;; "polite" and "polite4g" see the refused growth and return normally: no error.
(module
  (import "scripthost" "return_value" (func $return_value (param i32 i32)))
  (import "scripthost" "fail" (func $fail (param i32 i32)))
  (memory (export "memory") 1)
  ;; def: offset 1024, length 41
  (data (i32.const 1024) "{\"producers\":{\"bomb\":{\"handler\":\"bomb\"}}}")
  (data (i32.const 2048) "1")
  ;; offset 3072, length 15
  (data (i32.const 3072) "out of memory!!")
  (func (export "scripthost_abi_version") (result i32) (i32.const 1))
  (func (export "scripthost_describe") (call $return_value (i32.const 1024) (i32.const 41)))

  (func (export "bomb")
    (loop $l
      (br_if $l (i32.ne (memory.grow (i32.const 16)) (i32.const -1))))
    unreachable)

  (func (export "huge")
    (drop (memory.grow (i32.const 0x8000)))
    unreachable)

  (func (export "past4g")
    (drop (memory.grow (i32.const 0x10000)))
    unreachable)

  (func (export "maxgrow")
    (drop (memory.grow (i32.const -1)))
    unreachable)

  (func $grow_in_blocks (param $n i32) (result i32)
    (block $out (result i32)
      (block $a
        (block $b
          (br_table $a $b $a (local.get $n)))
        (br $out (memory.grow (i32.const 0x20000))))
      (i32.const 0)))

  (func (export "nested")
    (drop (call $grow_in_blocks (i32.const 1)))
    (drop (i32.div_u (i32.const 1) (i32.const 0))))

  (func (export "failafter")
    (if (i32.eq (memory.grow (i32.const 0x8000)) (i32.const -1))
      (then (call $fail (i32.const 3072) (i32.const 15)))))

  (func (export "polite")
    (if (i32.eq (memory.grow (i32.const 0x8000)) (i32.const -1))
      (then (call $return_value (i32.const 2048) (i32.const 1)))
      (else unreachable)))

  (func (export "polite4g")
    (if (i32.eq (memory.grow (i32.const 0x10000)) (i32.const -1))
      (then (call $return_value (i32.const 2048) (i32.const 1)))
      (else unreachable)))
)
