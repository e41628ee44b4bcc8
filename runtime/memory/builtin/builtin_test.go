package builtin_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nagent/nagent/runtime/llm"
	"github.com/nagent/nagent/runtime/memory"
	"github.com/nagent/nagent/runtime/memory/builtin"
)

var t0 = time.Date(2026, 6, 27, 15, 52, 6, 0, time.UTC)

var obsLine = regexp.MustCompile(`^- \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ [\w-]+: .+$`)

func TestObservations(t *testing.T) {
	dir := t.TempDir()
	p := builtin.New(dir, builtin.Options{ObservationChars: 600})
	ctx := context.Background()
	if err := p.SyncTurn(ctx, memory.SyncTurn{SessionID: "s0", User: "?", Assistant: "!", Time: t0}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, builtin.ObservationsFile)); !os.IsNotExist(err) {
		t.Errorf("a turn without keywords wrote observations.md: %v", err)
	}
	for i := 0; i < 200; i++ {
		err := p.SyncTurn(ctx, memory.SyncTurn{SessionID: fmt.Sprintf("s%d", i), Time: t0,
			User: fmt.Sprintf("现在几点了？打印下UTC时间。 topic%d", i), Assistant: "外部记忆1：当前的UTC时间是15:52。"})
		if err != nil {
			t.Fatal(err)
		}
	}
	data, _ := os.ReadFile(filepath.Join(dir, builtin.ObservationsFile))
	if len(data) > 3*600+200 {
		t.Errorf("observations.md is %d bytes; its budget is 600 characters", len(data))
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	for _, l := range lines {
		if !obsLine.MatchString(l) {
			t.Errorf("malformed line %q", l)
		}
	}
	if last := lines[len(lines)-1]; last != "- 2026-06-27T15:52:06Z s199: UTC, 时间, 现在, 在几, 几点, 打印, 印下, topic199" {
		t.Errorf("last line = %q", last)
	}
	salvage, err := p.OnPreCompress(ctx, memory.PreCompress{Messages: []llm.Message{
		{Role: llm.RoleUser, Content: "Deploy the kestrel cluster"}, {Role: llm.RoleTool, Content: "secret tool output"}}})
	if err != nil || salvage != "topics: Deploy, kestrel, cluster" {
		t.Errorf("pre-compress salvage = %q, %v", salvage, err)
	}
}

// TestObservationsCrashSafety kills a process that is syncing turns as
// fast as it can: observations.md never holds a half-written line.
func TestObservationsCrashSafety(t *testing.T) {
	if dir := os.Getenv("NAGENT_OBS_CRASH_DIR"); dir != "" {
		p := builtin.New(dir, builtin.Options{ObservationChars: 20_000})
		os.WriteFile(filepath.Join(dir, "started"), nil, 0o600)
		long := strings.Repeat("kestrel cluster deploy ", 200)
		for i := 0; ; i++ {
			p.SyncTurn(context.Background(), memory.SyncTurn{SessionID: fmt.Sprintf("s%d", i), User: long + fmt.Sprint(i), Assistant: long})
		}
	}
	if testing.Short() {
		t.Skip("spawns processes")
	}
	dir := t.TempDir()
	for round := 0; round < 15; round++ {
		cmd := exec.Command(os.Args[0], "-test.run=^TestObservationsCrashSafety$")
		cmd.Env = append(os.Environ(), "NAGENT_OBS_CRASH_DIR="+dir)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
			if _, err := os.Stat(filepath.Join(dir, "started")); err == nil {
				break
			}
			if time.Now().After(deadline) {
				cmd.Process.Kill()
				t.Fatal("the writer did not start")
			}
		}
		os.Remove(filepath.Join(dir, "started"))
		time.Sleep(time.Duration(rand.IntN(30_000)) * time.Microsecond)
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		data, err := os.ReadFile(filepath.Join(dir, builtin.ObservationsFile))
		if err != nil {
			continue // killed before the first line
		}
		if len(data) > 0 && data[len(data)-1] != '\n' {
			t.Fatalf("round %d: observations.md ends in a half-written line: %q", round, data[max(0, len(data)-80):])
		}
		for _, l := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
			if !obsLine.MatchString(l) {
				t.Fatalf("round %d: malformed line %.80q", round, l)
			}
		}
	}
}
