package openai_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/nagent/nagent/runtime/config"
	"github.com/nagent/nagent/runtime/llm/scripted"
)

// TestMetadataExternalMemory: a client chooses a new session's external
// memory with metadata.external_memory; the selection is locked by the
// first turn, and the project's memory reaches the system message.
func TestMetadataExternalMemory(t *testing.T) {
	var home string
	ts := MustServe(t, func(c *config.Config) { home = c.Home }, scripted.Reply{Content: "外部记忆1：好"}, scripted.Reply{Content: "again"})
	dir := filepath.Join(home, "projects", "external_memory_1")
	os.MkdirAll(dir, 0o700)
	os.WriteFile(filepath.Join(dir, "memory.md"), []byte(`所有的回复，必须以"外部记忆1："开头儿。`), 0o600)

	body := `{"model":"nagent-test","metadata":{"external_memory":"builtin, external_memory_1"},"messages":[{"role":"user","content":"你好"}]}`
	resp := ts.post(t, "/v1/chat/completions", body, "X-Session-Id", "meta-mem")
	resp.Body.Close()
	// A later request cannot change the locked selection.
	resp = ts.post(t, "/v1/chat/completions", `{"model":"nagent-test","metadata":{"external_memory":""},"messages":[{"role":"user","content":"你好"},{"role":"assistant","content":"外部记忆1：好"},{"role":"user","content":"再来"}]}`,
		"X-Session-Id", "meta-mem")
	resp.Body.Close()

	sess, err := ts.app.DB.GetSession(context.Background(), "meta-mem")
	if err != nil || !slices.Equal(sess.ExternalMemoryEnabled, []string{"builtin", "external_memory_1"}) {
		t.Fatalf("session = %+v, %v", sess, err)
	}
	for i, r := range ts.model.Requests() {
		if !strings.Contains(r.Messages[0].Content, `所有的回复，必须以"外部记忆1："开头儿。`) {
			t.Errorf("request %d: system message lacks the project's memory", i+1)
		}
	}
}
