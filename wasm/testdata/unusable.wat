;; unusable: a plugin whose nagent_check export says it cannot run here. The
;; check writes its reason on stdout and returns non-zero.
(module
  (import "wasi_snapshot_preview1" "fd_write"
    (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (data (i32.const 16) "needs the CUDA driver")
  (func (export "nagent_check") (result i32)
    (i32.store (i32.const 0) (i32.const 16))
    (i32.store (i32.const 4) (i32.const 21))
    (drop (call $fd_write (i32.const 1) (i32.const 0) (i32.const 1) (i32.const 8)))
    (i32.const 1))
  (func (export "_start")))
