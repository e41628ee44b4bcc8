package main_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/nagent/nagent/adapters/feishu/feishutest"
	"github.com/nagent/nagent/runtime/llm/scripted"
)

// readyz returns /readyz's status code and its checks.
func readyz(tb testing.TB, url string) (int, map[string]string) {
	tb.Helper()
	resp, err := http.Get(url + "/readyz")
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Checks map[string]string `json:"checks"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		tb.Fatal(err)
	}
	return resp.StatusCode, body.Checks
}

// TestServeFeishuBot runs `nagent serve` with Feishu credentials against
// the fake open platform: the bot connects, answers a direct message, and
// /readyz reports its connection.
func TestServeFeishuBot(t *testing.T) {
	const secret = "feishu-secret-should-never-print"
	fake := feishutest.Start("cli_serve_test", secret, "ou_bot")
	t.Cleanup(fake.Close)
	n := newNagent(t, scripted.Reply{Content: "hello from serve"})
	_, url, logs := n.startServe(t,
		"NAGENT_FEISHU_APP_ID=cli_serve_test", "NAGENT_FEISHU_APP_SECRET="+secret, "NAGENT_FEISHU_DOMAIN="+fake.URL())

	waitUntil(t, func() bool { _, c := readyz(t, url); return c["gateway"] == "ok" && fake.Connected() > 0 })
	ev := feishutest.MessageEvent("cli_serve_test", feishutest.Message{MessageID: "om_serve", ChatID: "oc_serve", Sender: "ou_alice", Text: "hi bot"})
	if err := fake.Push("f1", ev, 2); err != nil { // in two fragments
		t.Fatal(err)
	}
	waitUntil(t, func() bool { return len(fake.Calls()) == 1 })
	if c := fake.Calls()[0]; c.Kind != "reply" || c.MessageID != "om_serve" || !strings.Contains(c.Content, "hello from serve") {
		t.Fatalf("reply = %+v", c)
	}

	// A schedule delivered to a Feishu chat goes out through the bot.
	n.model.SetResponder(scripted.Echo)
	at := time.Now().Add(3 * time.Second).UTC().Format(time.RFC3339)
	if _, stderr, code := n.run(t, "", "schedule", "add", "to-feishu", "--at", at, "--prompt", "daily digest", "--deliver", "feishu:oc_sched"); code != 0 {
		t.Fatalf("schedule add: exit %d: %s", code, stderr)
	}
	waitUntil(t, func() bool {
		for _, c := range fake.Calls() {
			if c.Kind == "create" && c.MessageID == "oc_sched" && strings.Contains(c.Content, "echo: daily digest") {
				return true
			}
		}
		return false
	})

	fake.Refuse(true)
	fake.DropConnections()
	waitUntil(t, func() bool { _, c := readyz(t, url); return strings.Contains(c["gateway"], "feishu reconnecting") })
	if code, c := readyz(t, url); code != http.StatusOK {
		t.Errorf("/readyz = %d %v; a reconnecting bot must not fail the API's readiness", code, c)
	}
	fake.Refuse(false)
	waitUntil(t, func() bool { _, c := readyz(t, url); return c["gateway"] == "ok" })
	if strings.Contains(logs.String(), secret) {
		t.Errorf("the server logged the Feishu app secret:\n%s", logs)
	}
}
