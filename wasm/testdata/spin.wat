;; spin: a CPU-bound WASI command for measuring the cost of the timeout
;; mechanism: a tight loop of 20 million iterations, then {"content":"done"}.
(module
  (import "wasi_snapshot_preview1" "fd_write"
    (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (data (i32.const 16) "{\"content\":\"done\"}\n")
  (global $sink (mut i32) (i32.const 0))
  (func $spin (param $n i32) (result i32)
    (local $i i32) (local $acc i32)
    (loop $next
      (local.set $acc (i32.add (local.get $acc) (i32.xor (local.get $i) (i32.shl (local.get $acc) (i32.const 1)))))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br_if $next (i32.lt_u (local.get $i) (local.get $n))))
    (local.get $acc))
  (func (export "_start")
    (global.set $sink (call $spin (i32.const 20000000)))
    (i32.store (i32.const 0) (i32.const 16))
    (i32.store (i32.const 4) (i32.const 19))
    (drop (call $fd_write (i32.const 1) (i32.const 0) (i32.const 1) (i32.const 8)))))
