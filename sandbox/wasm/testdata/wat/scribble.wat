;; Reset test guest. _initialize leaves a mark in memory and a global, with no host
;; calls, so the engine keeps its instances and resets them between invocations.
;; "check" returns a checksum of the whole memory, the memory size and every global;
;; "count" bumps a counter in memory and in a global and returns it (1 in a pristine
;; instance); "scribble" overwrites all of memory and every global and returns
;; normally; "scribble_grow" grows memory first; "scribble_trap" scribbles, then traps.
;; "spin" scribbles, then loops forever.
;; "random" returns 8 bytes from WASI random_get as 16 hex digits.
(module
  (import "wasi_snapshot_preview1" "random_get" (func $random_get (param i32 i32) (result i32)))
  (import "scripthost" "return_value" (func $return_value (param i32 i32)))
  (memory (export "memory") 2)
  (global $a (mut i32) (i32.const 7))
  (global $b (mut i64) (i64.const 8))
  (global $c (mut f32) (f32.const 1.5))
  (global $d (mut f64) (f64.const 2.5))
  (global $inited (mut i32) (i32.const 0))
  (global $counter (mut i32) (i32.const 0))
  ;; def: offset 1024, length 43
  (data (i32.const 1024) "{\"producers\":{\"check\":{\"handler\":\"check\"}}}")
  (data (i32.const 2000) "pristine")
  (func (export "scripthost_abi_version") (result i32) (i32.const 1))
  (func (export "scripthost_describe") (call $return_value (i32.const 1024) (i32.const 43)))

  (func (export "_initialize")
    (i32.store (i32.const 3000) (i32.const 0x696e6974))
    (global.set $inited (i32.const 1)))

  ;; Writes n as 8 hex digits at 65000+off.
  (func $hex (param $n i32) (param $off i32) (local $i i32) (local $d i32)
    (loop $l
      (local.set $d (i32.and (i32.shr_u (local.get $n) (i32.sub (i32.const 28) (i32.mul (local.get $i) (i32.const 4)))) (i32.const 15)))
      (i32.store8 (i32.add (i32.add (i32.const 65000) (local.get $off)) (local.get $i))
        (i32.add (local.get $d) (select (i32.const 48) (i32.const 87) (i32.lt_u (local.get $d) (i32.const 10)))))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br_if $l (i32.lt_u (local.get $i) (i32.const 8)))))

  ;; Returns "\"xxxxxxxx\"": the checksum as hex in a JSON string.
  (func $return_hex (param $n i32)
    (i32.store8 (i32.const 64999) (i32.const 34))
    (call $hex (local.get $n) (i32.const 0))
    (i32.store8 (i32.const 65008) (i32.const 34))
    (call $return_value (i32.const 64999) (i32.const 10)))

  (func (export "check") (local $p i32) (local $sum i32) (local $end i32)
    (local.set $end (i32.mul (memory.size) (i32.const 65536)))
    (loop $l
      (local.set $sum (i32.add (i32.mul (local.get $sum) (i32.const 31)) (i32.load (local.get $p))))
      (local.set $p (i32.add (local.get $p) (i32.const 4)))
      (br_if $l (i32.lt_u (local.get $p) (local.get $end))))
    (local.set $sum (i32.add (local.get $sum) (i32.mul (memory.size) (i32.const 1000003))))
    (local.set $sum (i32.add (local.get $sum) (global.get $a)))
    (local.set $sum (i32.add (local.get $sum) (i32.wrap_i64 (global.get $b))))
    (local.set $sum (i32.add (local.get $sum) (i32.reinterpret_f32 (global.get $c))))
    (local.set $sum (i32.add (local.get $sum) (i32.wrap_i64 (i64.reinterpret_f64 (global.get $d)))))
    (local.set $sum (i32.add (local.get $sum) (i32.mul (global.get $inited) (i32.const 77))))
    (local.set $sum (i32.add (local.get $sum) (i32.mul (global.get $counter) (i32.const 999))))
    ;; the scratch area the checksum is written to is cleared first, so that the
    ;; result does not depend on a previous check
    (memory.fill (i32.const 64999) (i32.const 0) (i32.const 10))
    (call $return_hex (local.get $sum)))

  (func (export "count")
    (i32.store (i32.const 4096) (i32.add (i32.load (i32.const 4096)) (i32.const 1)))
    (global.set $counter (i32.add (global.get $counter) (i32.const 1)))
    (i32.store8 (i32.const 4100) (i32.add (i32.const 48) (i32.add (i32.load (i32.const 4096)) (global.get $counter))))
    (call $return_value (i32.const 4100) (i32.const 1)))

  (func $scribble
    (memory.fill (i32.const 0) (i32.const 0xab) (i32.mul (memory.size) (i32.const 65536)))
    (global.set $a (i32.const -1))
    (global.set $b (i64.const -1))
    (global.set $c (f32.const -1))
    (global.set $d (f64.const -1))
    (global.set $inited (i32.const 9))
    (global.set $counter (i32.const 12345)))

  (func (export "scribble") (call $scribble))
  (func (export "scribble_grow") (drop (memory.grow (i32.const 1))) (call $scribble))
  (func (export "scribble_trap") (call $scribble) unreachable)
  (func (export "spin") (call $scribble) (loop $l (br $l)))

  (func (export "random")
    (drop (call $random_get (i32.const 5000) (i32.const 4)))
    (drop (call $random_get (i32.const 5004) (i32.const 4)))
    (i32.store8 (i32.const 64999) (i32.const 34))
    (call $hex (i32.load (i32.const 5000)) (i32.const 0))
    (call $hex (i32.load (i32.const 5004)) (i32.const 8))
    (i32.store8 (i32.const 65016) (i32.const 34))
    (call $return_value (i32.const 64999) (i32.const 18)))
)
