// Command probe is a test plugin in Go (GOOS=wasip1) that pokes at the
// sandbox: files, environment, the nagent key-value store and log, sleep,
// panics, memory and CPU. Tests build it with internal/plugintest.
package main

import (
	"encoding/json"
	"io"
	"os"
	"strings"
	"time"
	"unsafe"
)

//go:wasmimport nagent log
func hostLog(level int32, ptr unsafe.Pointer, n uint32)

//go:wasmimport nagent kv_get
func kvGet(keyPtr unsafe.Pointer, keyLen uint32, outPtr unsafe.Pointer, outCap uint32) int32

//go:wasmimport nagent kv_set
func kvSet(keyPtr unsafe.Pointer, keyLen uint32, valPtr unsafe.Pointer, valLen uint32) int32

//go:wasmimport nagent kv_delete
func kvDelete(keyPtr unsafe.Pointer, keyLen uint32) int32

//go:wasmimport nagent last_result
func lastResult(outPtr unsafe.Pointer, outCap uint32) int32

type request struct {
	Tool      string            `json:"tool"`
	Arguments map[string]any    `json:"arguments"`
	Config    map[string]any    `json:"config"`
	Secrets   map[string]string `json:"secrets"`
	SessionID string            `json:"session_id"`
	Metadata  map[string]any    `json:"metadata"`
}

func reply(v any) {
	json.NewEncoder(os.Stdout).Encode(map[string]any{"content": v})
}

func fail(msg string) {
	json.NewEncoder(os.Stdout).Encode(map[string]any{"error": msg})
}

func ptr(b []byte) unsafe.Pointer {
	if len(b) == 0 {
		return nil
	}
	return unsafe.Pointer(&b[0])
}

func main() {
	in, _ := io.ReadAll(os.Stdin)
	var req request
	if err := json.Unmarshal(in, &req); err != nil {
		fail("bad request: " + err.Error())
		return
	}
	str := func(k string) string { s, _ := req.Arguments[k].(string); return s }
	num := func(k string) int { f, _ := req.Arguments[k].(float64); return int(f) }
	switch req.Tool {
	case "nagent.check":
		if req.Config["usable"] == false {
			fail("config says usable: false")
			return
		}
		reply("ok")
	case "echo":
		reply(req)
	case "read_file":
		b, err := os.ReadFile(str("path"))
		if err != nil {
			fail(err.Error())
			return
		}
		reply(map[string]string{"text": string(b)})
	case "write_file":
		if err := os.WriteFile(str("path"), []byte(str("text")), 0o644); err != nil {
			fail(err.Error())
			return
		}
		reply("written")
	case "env":
		reply(os.Environ())
	case "log":
		msg := []byte(str("message"))
		hostLog(1, ptr(msg), uint32(len(msg)))
		reply("logged")
	case "kv":
		key := []byte(str("key"))
		switch str("op") {
		case "set":
			v := []byte(str("value"))
			if rc := kvSet(ptr(key), uint32(len(key)), ptr(v), uint32(len(v))); rc != 0 {
				fail("kv_set failed")
				return
			}
			reply("set")
		case "get":
			out := make([]byte, 4)
			n := kvGet(ptr(key), uint32(len(key)), ptr(out), uint32(len(out)))
			if n == -1 {
				reply(nil)
				return
			}
			if n < 0 {
				fail("kv_get failed")
				return
			}
			if int(n) > len(out) { // too small: fetch the whole value
				out = make([]byte, n)
				n = lastResult(ptr(out), uint32(len(out)))
			}
			reply(string(out[:n]))
		case "delete":
			kvDelete(ptr(key), uint32(len(key)))
			reply("deleted")
		}
	case "sleep":
		time.Sleep(time.Duration(num("ms")) * time.Millisecond)
		reply("slept")
	case "panic":
		panic("probe panicked on purpose")
	case "alloc":
		var keep [][]byte
		for i := 0; i < num("mib"); i++ {
			b := make([]byte, 1<<20)
			for j := 0; j < len(b); j += 4096 {
				b[j] = byte(i)
			}
			keep = append(keep, b)
		}
		reply(len(keep))
	case "spin":
		x := 0
		for i := 0; ; i++ {
			x ^= i
			if x == -1 {
				break
			}
		}
		reply(x)
	case "print":
		os.Stdout.WriteString(strings.Repeat("x", num("bytes")))
	default:
		fail("unknown tool " + req.Tool)
	}
}
