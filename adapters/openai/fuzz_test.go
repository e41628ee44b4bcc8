package openai

import (
	"net/http"
	"testing"
)

// FuzzDecodeChatRequest feeds arbitrary bodies through request decoding and
// validation: it must never panic, and every rejection must be a 4xx
// OpenAI error with a message.
func FuzzDecodeChatRequest(f *testing.F) {
	for _, seed := range []string{
		`{"model":"m","messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}],"stream":true,"stream_options":{"include_usage":true}}`,
		`{"model":"m","messages":[{"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c","content":"x"}]}`,
		`{"model":"m","messages":[],"tools":[{"type":"function","function":{"name":"f","parameters":{}}}],"tool_choice":{"type":"function","function":{"name":"f"}}}`,
		`{"model":"m","messages":"x","stop":["a"],"n":2}`,
		`{"model":`,
		`[]`,
		`null`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var req ChatCompletionRequest
		check := func(e *apiError) {
			if e != nil && (e.Status < 400 || e.Status >= 500 || e.Message == "" || e.Type == "") {
				t.Fatalf("bad rejection %+v for %q", e, body)
			}
		}
		if e := decodeJSON(body, &req); e != nil {
			check(e)
			return
		}
		_, e := toMessages(req.Messages)
		check(e)
		_, e = toolSpecs(req.Tools)
		check(e)
		_, e = toolChoice(req.ToolChoice)
		check(e)
		_, e = stopSequences(req.Stop)
		check(e)
		if e != nil && e.Status != http.StatusBadRequest {
			t.Fatalf("status %d", e.Status)
		}
	})
}
