package mdfile_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nagent/nagent/runtime/memory"
	"github.com/nagent/nagent/runtime/memory/mdfile"
)

var t0 = time.Date(2026, 6, 27, 15, 52, 6, 0, time.UTC)

func edit(tb testing.TB, d *mdfile.Dir, action, target, content, old string, at time.Time) memory.EditResult {
	tb.Helper()
	res, err := d.Edit(context.Background(), memory.Edit{Action: action, Target: target, Content: content, OldText: old, Time: at})
	if err != nil {
		tb.Fatalf("%s %q: %v", action, content+old, err)
	}
	return res
}

func TestEditAndSnapshot(t *testing.T) {
	dir := t.TempDir()
	now := t0
	d := mdfile.Open(dir, "builtin", mdfile.Options{Meta: true, MemoryChars: 60, Now: func() time.Time { return now }})

	if s, err := d.Snapshot(); err != nil || s != "" {
		t.Fatalf("empty snapshot = %q, %v", s, err)
	}
	edit(t, d, "add", "memory", "Old fact nobody confirms.", "", t0.Add(-365*24*time.Hour))
	edit(t, d, "add", "memory", "The build uses Go 1.26.", "", t0)
	edit(t, d, "add", "memory", "Deploys\n\nrun on Fridays.", "", t0) // blank lines inside an entry collapse
	edit(t, d, "add", "user", "Prefers metric units.", "", t0)
	res := edit(t, d, "add", "memory", "The build uses Go 1.26.", "", t0) // a duplicate confirms
	if res.Count != 3 || res.Message != "the entry was already present; it is now confirmed" {
		t.Errorf("duplicate add = %+v", res)
	}
	data, _ := os.ReadFile(filepath.Join(dir, "memory.md"))
	if string(data) != "Old fact nobody confirms.\n\nThe build uses Go 1.26.\n\nDeploys\nrun on Fridays.\n" {
		t.Errorf("memory.md = %q", data)
	}

	entries, _ := d.Entries(mdfile.MemoryFile)
	if entries[0].Trust >= 0.26 || entries[1].Trust != 0.6 || entries[2].Trust != 0.5 {
		t.Errorf("trust = %v, %v, %v; want the year-old entry decayed, the confirmed one raised", entries[0].Trust, entries[1].Trust, entries[2].Trust)
	}
	// The snapshot orders by trust and keeps within the 60-character budget.
	s, err := d.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	want := "## External memory: builtin/memory.md\nThe build uses Go 1.26.\n\nDeploys\nrun on Fridays.\n\n" +
		"(1 more entries are not shown here; read them with the memory tool.)\n\n## External memory: builtin/user.md\nPrefers metric units."
	if s != want {
		t.Errorf("snapshot =\n%s\nwant\n%s", s, want)
	}

	// Replace carries the trust of the replaced entry; remove drops its metadata.
	edit(t, d, "replace", "memory", "The build uses Go 1.27.", "Go 1.26", t0)
	edit(t, d, "remove", "memory", "", "nobody", t0)
	entries, _ = d.Entries(mdfile.MemoryFile)
	if len(entries) != 2 || entries[0].Text != "The build uses Go 1.27." || entries[0].Trust < 0.69 {
		t.Errorf("after replace/remove: %+v", entries)
	}
	var meta struct {
		Entries map[string]json.RawMessage `json:"entries"`
	}
	b, _ := os.ReadFile(filepath.Join(dir, mdfile.MetaFile))
	if err := json.Unmarshal(b, &meta); err != nil || len(meta.Entries) != 2 {
		t.Errorf("meta = %s, %v", b, err)
	}
}

var editErrorTests = []struct {
	name, action, content, old, want string
}{
	{"Ambiguous", "remove", "", "uses", "2 entries of memory.md contain"},
	{"NoMatch", "replace", "x", "nothing like this", "no entry of memory.md contains"},
	{"EmptyContent", "add", "  ", "", "content is empty"},
	{"EmptyOld", "remove", "", "", "old_text is empty"},
	{"OverLimit", "add", strings.Repeat("long ", 40), "", "over its limit of 100"},
	{"UnknownAction", "rewrite", "x", "", "unknown action"},
}

func TestEditErrors(t *testing.T) {
	d := mdfile.Open(t.TempDir(), "p", mdfile.Options{MaxFileChars: 100})
	edit(t, d, "add", "memory", "The API uses JSON.", "", t0)
	edit(t, d, "add", "memory", "The CLI uses flags.", "", t0)
	for _, tt := range editErrorTests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := d.Edit(context.Background(), memory.Edit{Action: tt.action, Target: "memory", Content: tt.content, OldText: tt.old})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

func TestRetrieve(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "memory.md"), []byte(
		"所有的回复，必须以\"外部记忆1：\"开头儿。\n\nThe staging database is db-staging.internal.\n\nProduction database backups run nightly.\n"), 0o600)
	d := mdfile.Open(dir, "external_memory_1", mdfile.Options{})
	for _, tt := range []struct{ query, want string }{
		{"现在几点了？打印下UTC时间。", ""}, // the mission's example: no shared word
		{"where is the staging database?", "- The staging database is db-staging.internal.\n- Production database backups run nightly."},
		{"回复的开头是什么", "- 所有的回复，必须以\"外部记忆1：\"开头儿。"},
	} {
		got, err := d.Retrieve(tt.query)
		if err != nil || got != tt.want {
			t.Errorf("Retrieve(%q) = %q, %v; want %q", tt.query, got, err, tt.want)
		}
	}
}

// TestCrashSafety kills a process that is rewriting memory files as fast
// as it can, many times, at random moments. After every crash memory.md
// and memory.meta.json are each whole: one complete version, never a mix
// or a truncated file, and the directory is usable again.
func TestCrashSafety(t *testing.T) {
	if dir := os.Getenv("NAGENT_MDFILE_CRASH_DIR"); dir != "" {
		crashChild(dir) // never returns
	}
	if testing.Short() {
		t.Skip("spawns processes")
	}
	dir := t.TempDir()
	d := mdfile.Open(dir, "builtin", mdfile.Options{Meta: true, MaxFileChars: 1 << 22})
	edit(t, d, "add", "memory", "base entry", "", t0)
	for round := 0; round < 25; round++ {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrashSafety$")
		cmd.Env = append(os.Environ(), "NAGENT_MDFILE_CRASH_DIR="+dir)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Wait until the writer is writing, then kill it at a random moment.
		started := filepath.Join(dir, "started")
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
			if _, err := os.Stat(started); err == nil {
				break
			}
			if time.Now().After(deadline) {
				cmd.Process.Kill()
				t.Fatal("the writer did not start")
			}
		}
		os.Remove(started)
		time.Sleep(time.Duration(rand.IntN(40_000)) * time.Microsecond)
		cmd.Process.Signal(syscall.SIGKILL)
		if err := cmd.Wait(); err == nil || !strings.Contains(err.Error(), "killed") {
			t.Fatalf("round %d: the writer was not killed mid-work: %v", round, err)
		}

		data, err := os.ReadFile(filepath.Join(dir, "memory.md"))
		if err != nil {
			t.Fatal(err)
		}
		checkWhole(t, round, string(data))
		meta, err := os.ReadFile(filepath.Join(dir, mdfile.MetaFile))
		if err != nil || !json.Valid(meta) {
			t.Fatalf("round %d: memory.meta.json is not whole JSON (%v): %.80q", round, err, meta)
		}
		// The directory still works after the crash.
		d2 := mdfile.Open(dir, "builtin", mdfile.Options{Meta: true, MaxFileChars: 1 << 22})
		if _, err := d2.Edit(context.Background(), memory.Edit{Action: "read", Target: "memory"}); err != nil {
			t.Fatalf("round %d: read after crash: %v", round, err)
		}
	}
}

// crashChild adds and removes big entries until it is killed.
func crashChild(dir string) {
	d := mdfile.Open(dir, "builtin", mdfile.Options{Meta: true, MaxFileChars: 1 << 22})
	pad := strings.Repeat("x", 1_000_000)
	os.WriteFile(filepath.Join(dir, "started"), nil, 0o600)
	for i := 0; ; i++ {
		name := fmt.Sprintf("entry-%d", i)
		if _, err := d.Edit(context.Background(), memory.Edit{Action: "add", Target: "memory", Content: name + " " + pad + " end"}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(3)
		}
		if i%2 == 1 {
			d.Edit(context.Background(), memory.Edit{Action: "remove", Target: "memory", OldText: fmt.Sprintf("entry-%d ", i-1)})
		}
	}
}

func checkWhole(t *testing.T, round int, data string) {
	t.Helper()
	if !strings.HasPrefix(data, "base entry\n") || !strings.HasSuffix(data, "\n") {
		t.Fatalf("round %d: memory.md is torn: %.60q … %.60q", round, data, data[max(0, len(data)-60):])
	}
	for _, block := range strings.Split(strings.TrimSpace(data), "\n\n")[1:] {
		if len(block) < 1_000_000 || !strings.HasPrefix(block, "entry-") || !strings.HasSuffix(block, " end") {
			t.Fatalf("round %d: a half-written entry survived the crash: %.60q (%d bytes)", round, block, len(block))
		}
	}
}
