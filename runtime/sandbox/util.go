package sandbox

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unicode/utf8"
)

func joinComma(s []string) string { return strings.Join(s, ",") }

func marshalJSON(v any) (json.RawMessage, error) {
	b, err := json.Marshal(v)
	return json.RawMessage(b), err
}

// writeFileAtomic writes data to path through a temporary file and rename,
// so that a running sandbox never sees a half-written module.
func writeFileAtomic(path string, data []byte) error {
	if old, err := os.ReadFile(path); err == nil && string(old) == string(data) {
		return nil
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Chmod(0o644); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

// truncateMiddle caps s at limit bytes keeping head and tail, with a marker
// naming the dropped byte count; no rune is split.
func truncateMiddle(s string, limit int) string {
	if limit <= 0 || len(s) <= limit {
		return s
	}
	marker := func(n int) string { return "\n…[truncated " + strconv.Itoa(n) + " bytes]…\n" }
	budget := limit - len(marker(len(s)))
	if budget < 2 {
		return s[:runeStart(s, limit)]
	}
	head := runeStart(s, (budget+1)/2)
	tail := len(s) - (budget - head)
	for tail < len(s) && !utf8.RuneStart(s[tail]) {
		tail++
	}
	return s[:head] + marker(tail-head) + s[tail:]
}

func runeStart(s string, i int) int {
	for i > 0 && i < len(s) && !utf8.RuneStart(s[i]) {
		i--
	}
	return i
}
