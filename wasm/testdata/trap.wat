;; trap: a WASI command that divides by zero.
(module
  (memory (export "memory") 1)
  (func $divide (param $n i32) (result i32)
    (i32.div_s (local.get $n) (i32.const 0)))
  (func (export "_start")
    (drop (call $divide (i32.const 1)))))
