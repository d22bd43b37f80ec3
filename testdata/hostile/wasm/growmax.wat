;; A module that declares its own maximum memory (4 pages), below the host's cap: "bomb"
;; grows by one page until memory.grow fails, then traps. The host must report a memory
;; limit error naming the declared maximum.
(module
  (import "scripthost" "return_value" (func $return_value (param i32 i32)))
  (memory (export "memory") 1 4)
  ;; def: offset 1024, length 41
  (data (i32.const 1024) "{\"producers\":{\"bomb\":{\"handler\":\"bomb\"}}}")
  (func (export "scripthost_abi_version") (result i32) (i32.const 1))
  (func (export "scripthost_describe") (call $return_value (i32.const 1024) (i32.const 41)))

  (func (export "bomb")
    (loop $l
      (br_if $l (i32.ne (memory.grow (i32.const 1)) (i32.const -1))))
    unreachable)
)
