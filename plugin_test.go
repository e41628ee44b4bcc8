package main_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/nagent/nagent/internal/plugintest"
	"github.com/nagent/nagent/runtime/llm"
	"github.com/nagent/nagent/runtime/llm/scripted"
)

// TestPluginHotInstallAndRemove: `nagent plugin install` and `remove`, run
// as separate processes, change the tools of a running `nagent serve`
// without a restart.
func TestPluginHotInstallAndRemove(t *testing.T) {
	n := newNagent(t)
	// Every turn: call word_count, then repeat what the tool said.
	n.model.SetResponder(func(r scripted.RecordedRequest) scripted.Reply {
		last := r.Messages[len(r.Messages)-1]
		if last.Role == llm.RoleTool {
			return scripted.Reply{Content: "tool said: " + last.Content}
		}
		return scripted.Reply{ToolCalls: []llm.ToolCall{{ID: "call_1", Name: "word_count", Arguments: `{"text":"one two three"}`}}}
	})
	_, url, _ := n.startServe(t)
	ask := func() string {
		t.Helper()
		body := `{"model":"scripted-model","messages":[{"role":"user","content":"count"}]}`
		resp, err := http.Post(url+"/v1/chat/completions", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out struct {
			Choices []struct {
				Message struct{ Content string } `json:"message"`
			} `json:"choices"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || len(out.Choices) == 0 {
			t.Fatalf("response: %v %+v", err, out)
		}
		return out.Choices[0].Message.Content
	}

	if got := ask(); !strings.Contains(got, `tool "word_count" does not exist`) {
		t.Fatalf("before install: %q", got)
	}

	out, stderr, code := n.run(t, "", "plugin", "install", plugintest.Textstats(t))
	if code != 0 || !strings.Contains(out, "installed plugin textstats 1.0.0") {
		t.Fatalf("install (exit %d): %s %s", code, out, stderr)
	}
	waitUntil(t, func() bool { return strings.Contains(ask(), `{"words":3,"lines":1,"chars":13}`) })

	out, _, code = n.run(t, "", "plugin", "list", "--json")
	var list struct {
		Plugins []struct {
			Name, State string
			Tools       []string
		}
	}
	if code != 0 || json.Unmarshal([]byte(out), &list) != nil || len(list.Plugins) != 1 ||
		list.Plugins[0].Name != "textstats" || list.Plugins[0].State != "ready" {
		t.Errorf("list (exit %d): %s", code, out)
	}

	out, stderr, code = n.run(t, "", "plugin", "call", "textstats", "word_count", "--args", `{"text":"direct call"}`)
	if code != 0 || !strings.Contains(out, `"words": 2`) {
		t.Errorf("call (exit %d): %s %s", code, out, stderr)
	}

	if out, stderr, code = n.run(t, "", "plugin", "remove", "textstats"); code != 0 {
		t.Fatalf("remove (exit %d): %s %s", code, out, stderr)
	}
	waitUntil(t, func() bool { return strings.Contains(ask(), `tool "word_count" does not exist`) })
}

// TestPluginCLIErrors: the CLI explains what is wrong.
func TestPluginCLIErrors(t *testing.T) {
	n := newNagent(t)
	bad := t.TempDir()
	cases := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"plugin", "install", bad}, 1, "no plugin.yaml in " + bad},
		{[]string{"plugin", "install", plugintest.Fixture(t, "loop", "limits: {memory_mib: 99999}\n")}, 1, "limits.memory_mib"},
		{[]string{"plugin", "remove", "nothere"}, 1, "plugin nothere is not installed"},
		{[]string{"plugin", "call", "nothere", "x"}, 1, "plugin nothere is not installed"},
		{[]string{"plugin", "call", "onlyname"}, 2, "usage: nagent plugin call NAME TOOL"},
		{[]string{"plugin", "frobnicate"}, 2, `unknown subcommand "frobnicate"`},
	}
	for _, c := range cases {
		_, stderr, code := n.run(t, "", c.args...)
		if code != c.code || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d with %q", c.args, code, stderr, c.code, c.want)
		}
	}
}
