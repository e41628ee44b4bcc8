package app_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nagent/nagent/runtime/config"
	"github.com/nagent/nagent/runtime/llm"
	"github.com/nagent/nagent/runtime/llm/scripted"
)

// writeSkill writes SKILL.md (and extra files) for one skill under dir.
func writeSkill(tb testing.TB, dir, name, skillMD string, files map[string]string) {
	tb.Helper()
	files[filepath.Join(name, "SKILL.md")] = skillMD
	for rel, body := range files {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
}

// TestSkillsThroughTheLoop: the model lists the skills, views one from
// $NAGENT_HOME/skills and one of its files, then tries to escape the skill
// directory; the escape is refused with a clear error and the turn goes on
// to its answer. A malformed SKILL.md next to it is left out of the list,
// and viewing it gives an error naming the file and field.
func TestSkillsThroughTheLoop(t *testing.T) {
	const answer = "Release notes drafted."
	srv := scripted.Start(
		scripted.Reply{ToolCalls: []llm.ToolCall{{ID: "c1", Name: "skills_list", Arguments: `{}`}}},
		scripted.Reply{ToolCalls: []llm.ToolCall{
			{ID: "c2", Name: "skill_view", Arguments: `{"name":"release-notes"}`},
			{ID: "c3", Name: "skill_view", Arguments: `{"name":"release-notes","file":"templates/notes.md"}`},
		}},
		scripted.Reply{ToolCalls: []llm.ToolCall{
			{ID: "c4", Name: "skill_view", Arguments: `{"name":"release-notes","file":"../../config.yaml"}`},
			{ID: "c5", Name: "skill_view", Arguments: `{"name":"malformed"}`},
		}},
		scripted.Reply{Content: answer},
	)
	defer srv.Close()
	cfg := testConfig(t, srv)
	writeSkill(t, cfg.SkillsDir(), "release-notes", `---
name: release-notes
description: Draft release notes from merged changes.
tags: [writing]
---
Group changes under Added, Changed and Fixed. Use templates/notes.md.
`, map[string]string{"release-notes/templates/notes.md": "## Added\n## Changed\n## Fixed\n"})
	writeSkill(t, cfg.SkillsDir(), "malformed", "---\nname: malformed\n---\nno description\n", map[string]string{})
	if err := os.WriteFile(filepath.Join(cfg.Home, "config.yaml"), []byte("llm: {model: secret-config}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	a := MustNewApp(t, cfg)

	res, err := a.Chat.Complete(context.Background(), userTurn("sk", "Write release notes"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != "completed" || res.Content != answer {
		t.Fatalf("result = %+v", res)
	}
	reqs := srv.Requests()
	if len(reqs) != 4 {
		t.Fatalf("inferences = %d, want 4", len(reqs))
	}
	var listDesc string
	for _, tool := range reqs[0].Tools {
		if tool.Name == "skills_list" {
			listDesc = tool.Description
		}
	}
	if !strings.Contains(listDesc, "- release-notes: Draft release notes from merged changes.") ||
		!strings.Contains(listDesc, "- code-review:") {
		t.Errorf("skills_list description = %q, want bundled and home skills", listDesc)
	}
	if strings.Contains(listDesc, "Added, Changed") || strings.Contains(listDesc, "malformed") {
		t.Errorf("skills_list description discloses a body or an invalid skill: %q", listDesc)
	}
	if strings.Contains(reqs[0].Messages[0].Content, "Added, Changed") {
		t.Error("a skill body entered the system prompt")
	}

	tool := func(req int, id string) llm.Message {
		t.Helper()
		for _, m := range reqs[req].Messages {
			if m.Role == llm.RoleTool && m.ToolCallID == id {
				return m
			}
		}
		t.Fatalf("request %d has no tool message %s", req, id)
		return llm.Message{}
	}
	if c := tool(1, "c1").Content; !strings.Contains(c, `"name":"release-notes"`) || strings.Contains(c, "malformed") {
		t.Errorf("skills_list result = %s", c)
	}
	if c := tool(2, "c2").Content; !strings.Contains(c, "Group changes under Added") || !strings.Contains(c, "templates/notes.md") {
		t.Errorf("skill_view result = %s", c)
	}
	if c := tool(2, "c3").Content; c != "## Added\n## Changed\n## Fixed\n" {
		t.Errorf("skill_view file = %q", c)
	}
	c := tool(3, "c4").Content
	if !strings.Contains(c, "refused") || !strings.Contains(c, "outside skill release-notes") || strings.Contains(c, "secret-config") {
		t.Errorf("traversal result = %q, want a refusal", c)
	}
	c = tool(3, "c5").Content
	if !strings.Contains(c, "skill malformed is not available because its SKILL.md is invalid") || !strings.Contains(c, "field description") {
		t.Errorf("malformed skill result = %q", c)
	}
	calls, _ := a.DB.ListToolCalls(context.Background(), "sk")
	if len(calls) != 5 || calls[3].Status != "error" || calls[4].Status != "error" {
		t.Errorf("tool call records = %+v", calls)
	}
}

// TestSkillsFromConfiguredDirs: a directory from skills.dirs overrides a
// skill of $NAGENT_HOME/skills by name.
func TestSkillsFromConfiguredDirs(t *testing.T) {
	srv := scripted.Start()
	defer srv.Close()
	cfg := testConfig(t, srv)
	extra := t.TempDir()
	writeSkill(t, cfg.SkillsDir(), "deploy", "---\nname: deploy\ndescription: home version\n---\nhome\n", map[string]string{})
	writeSkill(t, extra, "deploy", "---\nname: deploy\ndescription: extra version\n---\nextra\n", map[string]string{})
	cfg.Skills = config.Skills{Dirs: []string{extra}}
	a := MustNewApp(t, cfg)
	s, ok := a.Skills.Catalog().Get("deploy")
	if !ok || s.Description != "extra version" || s.Source != extra {
		t.Errorf("deploy = %+v", s)
	}
}
