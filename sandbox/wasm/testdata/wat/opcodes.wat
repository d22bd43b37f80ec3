;; Instructions of every immediate shape the engine's decoder knows (block types,
;; br_table, call_indirect, select t, memargs, constants of each width, reference
;; types, bulk memory, saturating truncation, sign extension, SIMD lanes, shuffles and
;; lane loads), with memory.grow among them. The engine rewrites each memory.grow; the
;; test checks the module still computes the same results (TestDecoderOpcodes).
(module
  (import "scripthost" "return_value" (func $return_value (param i32 i32)))
  (type $ii (func (param i32) (result i32)))
  (type $pair (func (result i32 i32)))
  (memory (export "memory") 1)
  (table $t 4 funcref)
  (table $ext 2 externref)
  (elem (table $t) (i32.const 0) func $double $inc)
  (elem $passive funcref (ref.func $double))
  (data $bytes "\01\02\03\04\05\06\07\08\09\0a\0b\0c\0d\0e\0f\10")
  (global $g (mut i64) (i64.const -0x7fffffffffffffff))
  (global $f (mut f64) (f64.const 1.5))
  ;; def: offset 1024, length 39
  (data (i32.const 1024) "{\"producers\":{\"mix\":{\"handler\":\"mix\"}}}")
  (func (export "scripthost_abi_version") (result i32) (i32.const 1))
  (func (export "scripthost_describe") (call $return_value (i32.const 1024) (i32.const 39)))

  (func $double (type $ii) (i32.mul (local.get 0) (i32.const 2)))
  (func $inc (type $ii) (i32.add (local.get 0) (i32.const 1)))
  (func $two (type $pair) (i32.const 20) (i32.const 22))

  ;; Returns a sum over everything above; mix_expected is what it must be.
  (func $compute (result i32) (local $acc i32) (local $v v128) (local $x i64)
    ;; blocks with each block type, br_table
    (local.set $acc
      (block $out (result i32)
        (block $b1
          (block $b0
            (br_table $b0 $b1 $b0 (i32.const 1)))
          (br $out (i32.const 100)))
        (i32.const 7)))
    (local.set $acc (i32.add (local.get $acc) (call $two) (i32.add)))
    (if (result i32) (i32.eqz (local.get $acc)) (then (i32.const 0)) (else (i32.const 3)))
    (local.set $acc (i32.add (local.get $acc)))
    (loop $l (result i32) (i32.const 1))
    (local.set $acc (i32.add (local.get $acc)))
    ;; call_indirect, select t, ref.func, ref.null, table.get/set/size/grow/fill
    (local.set $acc (i32.add (local.get $acc)
      (call_indirect $t (type $ii) (i32.const 5) (i32.const 0))))
    (local.set $acc (i32.add (local.get $acc)
      (select (result i32) (i32.const 4) (i32.const 9) (i32.const 1))))
    (table.set $t (i32.const 2) (ref.func $inc))
    (local.set $acc (i32.add (local.get $acc)
      (call_indirect $t (type $ii) (i32.const 5) (i32.const 2))))
    (drop (table.grow $ext (ref.null extern) (i32.const 1)))
    (table.fill $ext (i32.const 0) (ref.null extern) (i32.const 3))
    (local.set $acc (i32.add (local.get $acc) (table.size $ext)))
    (local.set $acc (i32.add (local.get $acc) (ref.is_null (table.get $ext (i32.const 1)))))
    (table.init $t $passive (i32.const 3) (i32.const 0) (i32.const 1))
    (elem.drop $passive)
    (table.copy $t $t (i32.const 1) (i32.const 3) (i32.const 1))
    (local.set $acc (i32.add (local.get $acc)
      (call_indirect $t (type $ii) (i32.const 5) (i32.const 1))))
    ;; memory: grow (allowed), size, init, copy, fill, loads and stores with offsets
    (local.set $acc (i32.add (local.get $acc) (memory.grow (i32.const 1))))
    (local.set $acc (i32.add (local.get $acc) (memory.size)))
    (memory.init $bytes (i32.const 4096) (i32.const 0) (i32.const 16))
    (data.drop $bytes)
    (memory.copy (i32.const 8192) (i32.const 4096) (i32.const 16))
    (memory.fill (i32.const 8208) (i32.const 0xff) (i32.const 4))
    (local.set $acc (i32.add (local.get $acc) (i32.load8_u offset=8192 (i32.const 3))))
    (i64.store32 offset=16 align=2 (i32.const 8192) (i64.const 0x123456789))
    (local.set $acc (i32.add (local.get $acc) (i32.load16_s offset=16 (i32.const 8192))))
    ;; constants, globals, sign extension, saturating truncation
    (global.set $g (i64.add (global.get $g) (i64.const 0x7ffffffffffffff0)))
    (local.set $x (global.get $g))
    (local.set $acc (i32.add (local.get $acc) (i32.wrap_i64 (i64.extend8_s (local.get $x)))))
    (global.set $f (f64.add (global.get $f) (f64.const 0.25)))
    (local.set $acc (i32.add (local.get $acc) (i32.trunc_sat_f64_s (f64.mul (global.get $f) (f64.const 4)))))
    (local.set $acc (i32.add (local.get $acc) (i32.trunc_sat_f32_u (f32.const -3.5))))
    ;; SIMD: const, shuffle, lanes, lane load/store, zero load, splat load
    (local.set $v (v128.const i32x4 1 2 3 4))
    (local.set $v (i8x16.shuffle 4 5 6 7 0 1 2 3 8 9 10 11 12 13 14 15 (local.get $v) (local.get $v)))
    (local.set $acc (i32.add (local.get $acc) (i32x4.extract_lane 0 (local.get $v))))
    (local.set $v (i32x4.replace_lane 3 (local.get $v) (i32.const 40)))
    (local.set $acc (i32.add (local.get $acc) (i32x4.extract_lane 3 (i32x4.add (local.get $v) (local.get $v)))))
    (v128.store offset=32 (i32.const 8192) (local.get $v))
    (local.set $v (v128.load32_zero offset=44 (i32.const 8192)))
    (local.set $acc (i32.add (local.get $acc) (i32x4.extract_lane 0 (local.get $v))))
    (local.set $v (v128.load8_lane offset=8192 1 (i32.const 1) (local.get $v)))
    (local.set $acc (i32.add (local.get $acc) (i8x16.extract_lane_u 1 (local.get $v))))
    (v128.store16_lane offset=64 0 (i32.const 8192) (local.get $v))
    (local.set $acc (i32.add (local.get $acc) (i32.load16_u offset=64 (i32.const 8192))))
    (local.set $acc (i32.add (local.get $acc) (i16x8.extract_lane_s 7 (v128.load8x8_s offset=8192 (i32.const 0)))))
    (local.get $acc))

  ;; Writes compute()'s result as JSON digits at 2048 and returns it.
  (func (export "mix") (local $n i32) (local $p i32)
    (local.set $n (call $compute))
    (local.set $p (i32.const 2064))
    (loop $digits
      (local.set $p (i32.sub (local.get $p) (i32.const 1)))
      (i32.store8 (local.get $p) (i32.add (i32.const 48) (i32.rem_u (local.get $n) (i32.const 10))))
      (local.set $n (i32.div_u (local.get $n) (i32.const 10)))
      (br_if $digits (local.get $n)))
    (call $return_value (local.get $p) (i32.sub (i32.const 2064) (local.get $p))))

  ;; A refused growth inside SIMD code, then a trap.
  (func (export "simdgrow") (local $v v128)
    (local.set $v (v128.const i64x2 1 2))
    (drop (memory.grow (i32.wrap_i64 (i64x2.extract_lane 1 (i64x2.shl (local.get $v) (i32.const 16))))))
    unreachable)
)
