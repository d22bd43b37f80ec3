;; A start section, which the engine turns into an export it calls after
;; instantiation. The start function records that it ran (1), _initialize multiplies
;; that by 10, and "order" returns the result as two digits: "10" when start ran first,
;; once.
(module
  (import "scripthost" "return_value" (func $return_value (param i32 i32)))
  (memory (export "memory") 1)
  (global $seen (mut i32) (i32.const 0))
  ;; def: offset 1024, length 43
  (data (i32.const 1024) "{\"producers\":{\"order\":{\"handler\":\"order\"}}}")
  (func $start (global.set $seen (i32.add (global.get $seen) (i32.const 1))))
  (start $start)
  (func (export "scripthost_abi_version") (result i32) (i32.const 1))
  (func (export "scripthost_describe") (call $return_value (i32.const 1024) (i32.const 43)))
  (func (export "_initialize") (global.set $seen (i32.mul (global.get $seen) (i32.const 10))))
  ;; Returns $seen as one decimal digit pair: "10" when start ran once, then _initialize.
  (func (export "order")
    (i32.store8 (i32.const 0) (i32.add (i32.const 48) (i32.div_u (global.get $seen) (i32.const 10))))
    (i32.store8 (i32.const 1) (i32.add (i32.const 48) (i32.rem_u (global.get $seen) (i32.const 10))))
    (call $return_value (i32.const 0) (i32.const 2))))
