package main_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSkillsCommand: list, view and validate against a data directory with
// one user skill and one malformed skill.
func TestSkillsCommand(t *testing.T) {
	n := newNagent(t)
	dir := filepath.Join(n.home, "skills")
	os.MkdirAll(filepath.Join(dir, "greet", "references"), 0o755)
	os.WriteFile(filepath.Join(dir, "greet", "SKILL.md"), []byte("---\nname: greet\ndescription: Greet people.\ntags: [social]\n---\nSay hello.\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "greet", "references", "tone.md"), []byte("Be warm."), 0o644)
	os.MkdirAll(filepath.Join(dir, "bad"), 0o755)
	os.WriteFile(filepath.Join(dir, "bad", "SKILL.md"), []byte("---\nname: Bad Name\ndescription: x\n---\n"), 0o644)

	out, errOut, code := n.run(t, "", "skills", "list")
	if code != 0 || !strings.Contains(out, "greet") || !strings.Contains(out, "skill-creator") ||
		!strings.Contains(errOut, filepath.Join(dir, "bad", "SKILL.md")+": field name") {
		t.Errorf("skills list = %d\n%s\n%s", code, out, errOut)
	}
	out, _, code = n.run(t, "", "skills", "view", "greet", "--file", "references/tone.md")
	if code != 0 || out != "Be warm." {
		t.Errorf("skills view --file = %d %q", code, out)
	}
	_, errOut, code = n.run(t, "", "skills", "view", "greet", "--file", "../bad/SKILL.md")
	if code != 1 || !strings.Contains(errOut, "leaves the skill directory") {
		t.Errorf("skills view traversal = %d %q", code, errOut)
	}
	out, _, code = n.run(t, "", "skills", "validate", "--json")
	var v struct {
		Valid    bool `json:"valid"`
		Warnings []struct{ File, Field string }
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil || code != 1 || v.Valid || len(v.Warnings) != 1 || v.Warnings[0].Field != "name" {
		t.Errorf("skills validate = %d %s", code, out)
	}
	if _, _, code = n.run(t, "", "skills", "validate", filepath.Join(dir, "greet")); code != 0 {
		t.Errorf("skills validate DIR of a valid skill = %d", code)
	}
}

// TestKBCommand: add a local knowledge base from testdata, search it,
// re-ingest incrementally, add a Dify one whose key must never print, and
// remove both.
func TestKBCommand(t *testing.T) {
	n := newNagent(t)
	out, errOut, code := n.run(t, "", "kb", "add", "handbook", "--type", "local", "--dir", "runtime/knowledge/testdata/handbook", "--description", "HR policies")
	if code != 0 || !strings.Contains(out, "4 added") {
		t.Fatalf("kb add = %d\n%s\n%s", code, out, errOut)
	}
	out, _, code = n.run(t, "", "kb", "search", "annual leave days", "--kb", "handbook", "--top-k", "1")
	if code != 0 || !strings.Contains(out, "policies/leave.md") || !strings.Contains(out, "25 days") {
		t.Errorf("kb search = %d\n%s", code, out)
	}
	out, _, code = n.run(t, "", "kb", "ingest", "handbook", "--json")
	if code != 0 || !strings.Contains(out, `"unchanged": 4`) {
		t.Errorf("kb ingest = %d\n%s", code, out)
	}

	const key = "sk-dify-never-print-me"
	t.Setenv("DIFY_TEST_KEY", key)
	out, errOut, code = n.run(t, "", "kb", "add", "wiki", "--type", "dify", "--endpoint", "http://127.0.0.1:1/api", "--knowledge-id", "w1", "--secret-env", "DIFY_TEST_KEY", "--json")
	if code != 0 || strings.Contains(out+errOut, key) {
		t.Fatalf("kb add dify = %d\n%s\n%s", code, out, errOut)
	}
	for _, args := range [][]string{{"kb", "list"}, {"kb", "list", "--json"}, {"kb", "search", "leave"}, {"kb", "search", "leave", "--kb", "wiki"}} {
		out, errOut, _ := n.run(t, "", args...)
		if strings.Contains(out+errOut, key) {
			t.Errorf("%v printed the secret:\n%s\n%s", args, out, errOut)
		}
	}
	out, _, _ = n.run(t, "", "kb", "list", "--json")
	if !strings.Contains(out, `"has_secret": true`) {
		t.Errorf("kb list --json = %s", out)
	}
	_, errOut, code = n.run(t, "", "kb", "search", "leave", "--kb", "wiki")
	if code != 1 || !strings.Contains(errOut, "knowledge base wiki (dify)") {
		t.Errorf("kb search on a dead endpoint = %d %s", code, errOut)
	}
	for _, name := range []string{"wiki", "handbook"} {
		if _, errOut, code := n.run(t, "", "kb", "remove", name); code != 0 {
			t.Errorf("kb remove %s = %d %s", name, code, errOut)
		}
	}
	if out, _, _ := n.run(t, "", "kb", "list", "--json"); !strings.Contains(out, `"knowledge_bases": []`) {
		t.Errorf("kb list after remove = %s", out)
	}
}
