package sandbox

import (
	"errors"
	"strings"
)

var (
	errEnvClosed = errors.New("sandbox was released")
	errTimeout   = errors.New("sandbox execution timed out")
)

// looksLikeMemoryError reports whether Python died of a MemoryError: the
// last line of its traceback names it.
func looksLikeMemoryError(stderr []byte) bool {
	s := strings.TrimSpace(string(stderr))
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	return strings.HasPrefix(s, "MemoryError")
}

// safeName turns a session id into a file-name component: kept when it is
// short and plain, else a hash.
func safeName(id string, maxLen int) string {
	ok := id != "" && id != "." && id != ".." && len(id) <= maxLen
	for _, r := range id {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			ok = false
			break
		}
	}
	if ok {
		return id
	}
	return hashName(id)
}
