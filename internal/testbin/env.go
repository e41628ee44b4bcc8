package testbin

import (
	"net"
	"os"
	"strings"
	"testing"
)

// FreeAddr returns a 127.0.0.1 address with a port that was free a moment
// ago, for a server process the test starts.
func FreeAddr(tb testing.TB) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// EnvironWithout is the process environment less the variables with any of
// the prefixes, so that a developer's own settings cannot leak into a
// process the test starts.
func EnvironWithout(prefixes ...string) []string {
	var env []string
outer:
	for _, kv := range os.Environ() {
		for _, p := range prefixes {
			if strings.HasPrefix(kv, p) {
				continue outer
			}
		}
		env = append(env, kv)
	}
	return env
}
