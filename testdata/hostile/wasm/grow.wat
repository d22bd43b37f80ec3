;; memory.grow bomb: "bomb" grows memory by 16 pages until memory.grow fails, then
;; traps; "huge" asks for 2 GiB at once, then traps. The host must report a memory limit
;; error, not a bare trap. "polite" sees the refused growth and returns normally.
(module
  (import "scripthost" "return_value" (func $return_value (param i32 i32)))
  (memory (export "memory") 1)
  ;; def: offset 1024, length 41
  (data (i32.const 1024) "{\"producers\":{\"bomb\":{\"handler\":\"bomb\"}}}")
  (data (i32.const 2048) "1")
  (func (export "scripthost_abi_version") (result i32) (i32.const 1))
  (func (export "scripthost_describe") (call $return_value (i32.const 1024) (i32.const 41)))

  (func (export "bomb")
    (loop $l
      (br_if $l (i32.ne (memory.grow (i32.const 16)) (i32.const -1))))
    unreachable)

  (func (export "huge")
    (drop (memory.grow (i32.const 0x8000)))
    unreachable)

  (func (export "polite")
    (if (i32.eq (memory.grow (i32.const 0x8000)) (i32.const -1))
      (then (call $return_value (i32.const 2048) (i32.const 1)))
      (else unreachable)))
)
