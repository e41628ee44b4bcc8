package sandbox_test

import (
	"strings"
	"testing"

	"github.com/nagent/nagent/runtime/sandbox"
)

func TestOutputBuffer(t *testing.T) {
	var b sandbox.OutputBuffer
	b.Limit = 10
	b.Write([]byte("abc"))
	if got := string(b.Bytes()); got != "abc" {
		t.Fatalf("under the limit = %q", got)
	}
	b.Write([]byte("defghijklmnopqrstuvwxyz"))
	got := string(b.Bytes())
	if !strings.HasPrefix(got, "abcde") || !strings.HasSuffix(got, "vwxyz") || !strings.Contains(got, "[truncated 16 bytes]") {
		t.Errorf("over the limit = %q", got)
	}
	if b.Total() != 26 {
		t.Errorf("Total = %d", b.Total())
	}
}
