//go:build unix

package acp

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
)

// TestGuardStdout runs itself as a child that prints to stdout in three
// ways after guardStdout; only the protocol line may reach stdout.
func TestGuardStdout(t *testing.T) {
	if os.Getenv("NAGENT_ACP_GUARD_CHILD") == "1" {
		proto, err := guardStdout()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(3)
		}
		fmt.Println("stray fmt.Println")
		syscall.Write(1, []byte("stray write to fd 1\n"))
		child := exec.Command("sh", "-c", "echo stray child output")
		child.Stdout = os.NewFile(1, "fd1") // a child that inherits descriptor 1
		child.Run()
		fmt.Fprintln(proto, `{"jsonrpc":"2.0","method":"ok"}`)
		os.Exit(0)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestGuardStdout$")
	cmd.Env = append(os.Environ(), "NAGENT_ACP_GUARD_CHILD=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("child: %v\n%s", err, stderr.String())
	}
	if got := stdout.String(); got != "{\"jsonrpc\":\"2.0\",\"method\":\"ok\"}\n" {
		t.Errorf("stdout = %q, want the protocol line only", got)
	}
	for _, want := range []string{"stray fmt.Println", "stray write to fd 1", "stray child output"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
		}
	}
}
