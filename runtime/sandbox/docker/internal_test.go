package docker

import (
	"bufio"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nagent/nagent/runtime/sandbox"
)

var exitReasonTests = []struct {
	name   string
	code   int
	stderr string
	want   sandbox.ExitReason
}{
	{"OK", 0, "", sandbox.ExitOK},
	{"Error", 3, "boom\n", sandbox.ExitError},
	{"CPUSoftLimit", 128 + 24, "", sandbox.ExitLimit},
	{"FileSizeLimit", 128 + 25, "", sandbox.ExitLimit},
	{"SIGKILLWithoutOOMEvent", 128 + 9, "", sandbox.ExitLimit},
	{"SIGSEGV", 128 + 11, "", sandbox.ExitError},
	{"MemoryError", 1, "Traceback (most recent call last):\n  File \"main.py\"\nMemoryError\n", sandbox.ExitOOM},
	{"ForkFailed", 1, "Traceback:\nBlockingIOError: [Errno 11] Resource temporarily unavailable\n", sandbox.ExitLimit},
	{"MemoryErrorMentionedOnly", 1, "print('MemoryError')\nValueError: x\n", sandbox.ExitError},
}

func TestExitReason(t *testing.T) {
	for _, tt := range exitReasonTests {
		t.Run(tt.name, func(t *testing.T) {
			if got := exitReason(tt.code, []byte(tt.stderr)); got != tt.want {
				t.Errorf("exitReason(%d, %q) = %s, want %s", tt.code, tt.stderr, got, tt.want)
			}
		})
	}
}

func TestExecEnvKeepsCallerValues(t *testing.T) {
	got := execEnv(map[string]string{"HOME": "/scratch", "X": "1"})
	for _, want := range []string{"HOME=/scratch", "X=1", "PYTHONPATH=/opt/nagent", "PATH=/usr/local/bin:/usr/bin:/bin"} {
		if !slices.Contains(got, want) {
			t.Errorf("env %v lacks %s", got, want)
		}
	}
	if slices.Contains(got, "HOME=/tmp") {
		t.Errorf("a default overrode the caller's HOME: %v", got)
	}
}

func TestUsers(t *testing.T) {
	if uid, gid, ok := numericUser("65534:100"); !ok || uid != 65534 || gid != 100 {
		t.Errorf("numericUser = %d %d %v", uid, gid, ok)
	}
	if _, _, ok := numericUser("nobody"); ok {
		t.Error("a user name parsed as numeric")
	}
	if keeperUser("65534:65534") != "65533:65533" || keeperUser("65533:65533") != "65532:65532" {
		t.Error("the keeper user must differ from the sandbox user")
	}
	if n := containerName("a/b c"); !strings.HasPrefix(n, "nagent-sandbox-a-b-c-") {
		t.Errorf("containerName = %q", n)
	}
}

// TestStaging moves a call's files in and back out without following the
// symlinks code may leave behind.
func TestStaging(t *testing.T) {
	calls := t.TempDir()
	live := filepath.Join(calls, LiveScratchName)
	scratch := filepath.Join(calls, "1")
	os.Mkdir(scratch, 0o777)
	os.WriteFile(filepath.Join(scratch, "input.csv"), []byte("a,b"), 0o644)
	if err := stageIn(live, scratch, []byte("print(1)")); err != nil {
		t.Fatal(err)
	}
	if code, _ := os.ReadFile(filepath.Join(live, sandbox.CodeFileName)); string(code) != "print(1)" {
		t.Errorf("code in live dir = %q", code)
	}
	if _, err := os.Stat(filepath.Join(live, "input.csv")); err != nil {
		t.Errorf("staged input missing: %v", err)
	}
	// What the code leaves: a file, a dir and a symlink to a host path.
	secret := filepath.Join(t.TempDir(), "secret")
	os.WriteFile(secret, []byte("s"), 0o600)
	os.WriteFile(filepath.Join(live, "out.txt"), []byte("x"), 0o644)
	os.MkdirAll(filepath.Join(live, "d", "e"), 0o755)
	os.Symlink(secret, filepath.Join(live, "link"))
	if err := stageOut(live, scratch); err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(live); len(entries) != 0 {
		t.Errorf("live dir not emptied: %v", entries)
	}
	for _, name := range []string{"input.csv", "out.txt", "d/e", sandbox.CodeFileName} {
		if _, err := os.Stat(filepath.Join(scratch, name)); err != nil {
			t.Errorf("%s not in the call dir: %v", name, err)
		}
	}
	if fi, err := os.Lstat(filepath.Join(scratch, "link")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the symlink was not moved as a symlink: %v %v", fi, err)
	}
	if data, _ := os.ReadFile(secret); string(data) != "s" {
		t.Error("the symlink's target changed")
	}
	// The next call starts from an empty live dir even if stageOut failed.
	os.WriteFile(filepath.Join(live, "stale"), []byte("x"), 0o644)
	scratch2 := filepath.Join(calls, "2")
	os.Mkdir(scratch2, 0o777)
	if err := stageIn(live, scratch2, []byte("print(2)")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(live, "stale")); !os.IsNotExist(err) {
		t.Errorf("stale file survived staging: %v", err)
	}
}

// TestCallbackRelay joins connections to the current call's socket only.
func TestCallbackRelay(t *testing.T) {
	r, err := newCallbackRelay()
	if err != nil {
		t.Fatal(err)
	}
	defer r.close()
	if fi, err := os.Stat(r.root); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("relay root mode = %v, %v; want 0700", fi.Mode().Perm(), err)
	}
	sock := filepath.Join(r.dir, sandbox.SocketName)
	callDir := t.TempDir()
	ln, err := net.Listen("unix", filepath.Join(callDir, sandbox.SocketName))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { // answers every line until the peer closes
				defer c.Close()
				br := bufio.NewReader(c)
				for {
					line, err := br.ReadString('\n')
					if err != nil {
						return
					}
					c.Write([]byte("echo " + line))
				}
			}()
		}
	}()
	roundTrip := func() (string, error) {
		c, err := net.Dial("unix", sock)
		if err != nil {
			return "", err
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		c.Write([]byte("hi\n"))
		return bufio.NewReader(c).ReadString('\n')
	}
	if got, err := roundTrip(); err == nil {
		t.Errorf("relay answered between calls: %q", got)
	}
	r.startCall(callDir)
	if got, err := roundTrip(); err != nil || got != "echo hi\n" {
		t.Errorf("during a call: %q, %v", got, err)
	}
	held, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	held.Write([]byte("x\n"))
	bufio.NewReader(held).ReadString('\n')
	r.endCall()
	held.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := held.Read(make([]byte, 1)); err == nil {
		t.Error("a connection stayed open after the call ended")
	}
	if got, err := roundTrip(); err == nil {
		t.Errorf("relay answered after the call: %q", got)
	}
}
