package openai_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/nagent/nagent/adapters/openai"
	"github.com/nagent/nagent/runtime/config"
	"github.com/nagent/nagent/runtime/llm"
	"github.com/nagent/nagent/runtime/llm/scripted"
)

func (ts *testServer) get(tb testing.TB, path string) *http.Response {
	tb.Helper()
	req, _ := http.NewRequest("GET", ts.URL+path, nil)
	req.Header.Set("Authorization", "Bearer "+testKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { resp.Body.Close() })
	return resp
}

// createResponse posts body to /v1/responses and decodes a 200 answer.
func (ts *testServer) createResponse(tb testing.TB, body string, header ...string) (openai.Response, *http.Response) {
	tb.Helper()
	resp := ts.post(tb, "/v1/responses", body, header...)
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		tb.Fatalf("POST /v1/responses = %d: %s", resp.StatusCode, b)
	}
	return decode[openai.Response](tb, resp.Body), resp
}

// outputTexts are the output_text parts of a response's message items.
func outputTexts(r openai.Response) []string {
	var out []string
	for _, it := range r.Output {
		if it.Type != "message" {
			continue
		}
		for _, c := range it.Content {
			if c.Type == "output_text" {
				out = append(out, c.Text)
			}
		}
	}
	return out
}

func TestResponseStringInput(t *testing.T) {
	ts := MustServe(t, nil, scripted.Reply{Content: "Hello there."})
	r, resp := ts.createResponse(t, `{"model":"nagent-test","input":"hi"}`)
	if !strings.HasPrefix(r.ID, "resp_") || r.Object != "response" || r.Status != "completed" || r.Model != "nagent-test" || r.CreatedAt == 0 {
		t.Fatalf("response = %+v", r)
	}
	if got := outputTexts(r); len(got) != 1 || got[0] != "Hello there." {
		t.Errorf("output texts = %q", got)
	}
	it := r.Output[0]
	if !strings.HasPrefix(it.ID, "msg_") || it.Role != "assistant" || it.Status != "completed" {
		t.Errorf("message item = %+v", it)
	}
	if r.Usage == nil || r.Usage.TotalTokens == 0 || r.Usage.TotalTokens != r.Usage.InputTokens+r.Usage.OutputTokens {
		t.Errorf("usage = %+v", r.Usage)
	}
	if !r.Store || !r.ParallelToolCalls || r.Text.Format.Type != "text" || r.Error != nil || r.IncompleteDetails != nil {
		t.Errorf("echoed fields = %+v", r)
	}
	if resp.Header.Get("X-Session-Id") == "" {
		t.Error("no X-Session-Id header")
	}
	msgs := ts.model.Requests()[0].Messages
	if last := msgs[len(msgs)-1]; last.Role != llm.RoleUser || last.Content != "hi" {
		t.Errorf("provider request = %+v", msgs)
	}

	// The raw JSON has the fields clients index without checking.
	var raw map[string]any
	json.Unmarshal([]byte(mustMarshal(t, r)), &raw)
	for _, k := range []string{"error", "incomplete_details", "instructions", "previous_response_id", "metadata", "tools", "tool_choice", "temperature", "top_p", "max_output_tokens", "usage"} {
		if _, ok := raw[k]; !ok {
			t.Errorf("response lacks %q", k)
		}
	}
}

func mustMarshal(tb testing.TB, v any) string {
	tb.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		tb.Fatal(err)
	}
	return string(b)
}

func TestResponseMessageInputWithInstructions(t *testing.T) {
	ts := MustServe(t, nil, scripted.Reply{Content: "Bonjour."})
	r, _ := ts.createResponse(t, `{"model":"nagent-test","instructions":"Answer in French.","metadata":{"k":"v"},
		"temperature":0.2,"max_output_tokens":64,
		"input":[{"role":"developer","content":"Be brief."},
			{"type":"message","role":"user","content":[{"type":"input_text","text":"Say hello."}]}]}`)
	if r.Instructions == nil || *r.Instructions != "Answer in French." || r.Metadata["k"] != "v" ||
		r.Temperature == nil || *r.Temperature != 0.2 || r.MaxOutputTokens == nil || *r.MaxOutputTokens != 64 {
		t.Errorf("echoed fields = %+v", r)
	}
	msgs := ts.model.Requests()[0].Messages
	var got []string
	for _, m := range msgs[1:] { // after the stable system message
		got = append(got, string(m.Role)+":"+m.Content)
	}
	want := []string{"system:Answer in French.", "system:Be brief.", "user:Say hello."}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("provider messages = %q, want %q", got, want)
	}
	body := ts.model.Requests()[0].Body
	if !strings.Contains(string(body), `"max_tokens":64`) && !strings.Contains(string(body), `"max_completion_tokens":64`) {
		t.Errorf("max_output_tokens did not reach the provider: %s", body)
	}
}

func TestResponsePreviousResponseID(t *testing.T) {
	ts := MustServe(t, nil, scripted.Reply{Content: "Hello Ada."}, scripted.Reply{Content: "Your name is Ada."})
	first, resp1 := ts.createResponse(t, `{"model":"nagent-test","input":"I am Ada.","instructions":"Be kind."}`)
	second, resp2 := ts.createResponse(t, `{"model":"nagent-test","previous_response_id":"`+first.ID+`","instructions":"Be kind.","input":"What is my name?"}`)
	if outputTexts(second)[0] != "Your name is Ada." || second.PreviousResponseID == nil || *second.PreviousResponseID != first.ID {
		t.Errorf("second = %+v", second)
	}
	if sid := resp1.Header.Get("X-Session-Id"); sid == "" || resp2.Header.Get("X-Session-Id") != sid {
		t.Errorf("sessions %q and %q, want the same", sid, resp2.Header.Get("X-Session-Id"))
	}
	var got []string
	for _, m := range ts.model.Requests()[1].Messages[1:] {
		got = append(got, string(m.Role)+":"+m.Content)
	}
	// The same instructions are not stored twice.
	want := []string{"system:Be kind.", "user:I am Ada.", "assistant:Hello Ada.", "user:What is my name?"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("second provider request = %q, want %q", got, want)
	}

	t.Run("OtherSession", func(t *testing.T) {
		resp := ts.post(t, "/v1/responses", `{"model":"nagent-test","previous_response_id":"`+second.ID+`","input":"hi"}`, "X-Session-Id", "another")
		if resp.StatusCode != 400 {
			t.Fatalf("status = %d, want 400", resp.StatusCode)
		}
		if e := decode[errorBody](t, resp.Body).Error; e.Param == nil || *e.Param != "previous_response_id" {
			t.Errorf("error = %+v", e)
		}
	})
}

var responseErrorTests = []struct {
	name   string
	body   string
	status int
	param  string
	code   string
}{
	{name: "UnknownPreviousResponse", body: `{"model":"nagent-test","previous_response_id":"resp_nope","input":"hi"}`, status: 400, param: "previous_response_id", code: "previous_response_not_found"},
	{name: "MissingInput", body: `{"model":"nagent-test"}`, status: 400, param: "input"},
	{name: "EmptyInputArray", body: `{"model":"nagent-test","input":[]}`, status: 400, param: "input"},
	{name: "UnknownItemType", body: `{"model":"nagent-test","input":[{"type":"item_reference","id":"x"}]}`, status: 400, param: "input[0].type"},
	{name: "UnknownRole", body: `{"model":"nagent-test","input":[{"role":"robot","content":"hi"}]}`, status: 400, param: "input[0].role"},
	{name: "ImageContent", body: `{"model":"nagent-test","input":[{"role":"user","content":[{"type":"input_image","image_url":"x"}]}]}`, status: 400, param: "input[0].content"},
	{name: "CallWithoutID", body: `{"model":"nagent-test","input":[{"type":"function_call_output","output":"x"}]}`, status: 400, param: "input[0].call_id"},
	{name: "HostedTool", body: `{"model":"nagent-test","input":"hi","tools":[{"type":"web_search"}]}`, status: 400, param: "tools[0].type"},
	{name: "BadToolChoice", body: `{"model":"nagent-test","input":"hi","tool_choice":"sometimes"}`, status: 400, param: "tool_choice"},
	{name: "Background", body: `{"model":"nagent-test","input":"hi","background":true}`, status: 400, param: "background"},
	{name: "JSONSchema", body: `{"model":"nagent-test","input":"hi","text":{"format":{"type":"json_schema"}}}`, status: 400, param: "text.format.type"},
	{name: "UnknownModel", body: `{"model":"gpt-5-ultra","input":"hi"}`, status: 404},
}

func TestResponseErrors(t *testing.T) {
	ts := MustServe(t, nil)
	for _, tt := range responseErrorTests {
		t.Run(tt.name, func(t *testing.T) {
			resp := ts.post(t, "/v1/responses", tt.body)
			if resp.StatusCode != tt.status {
				t.Fatalf("status = %d, want %d", resp.StatusCode, tt.status)
			}
			e := decode[errorBody](t, resp.Body).Error
			if e.Message == "" || e.Type != "invalid_request_error" {
				t.Errorf("error = %+v", e)
			}
			if tt.param != "" && (e.Param == nil || *e.Param != tt.param) {
				t.Errorf("param = %v, want %q (%s)", e.Param, tt.param, e.Message)
			}
			if tt.code != "" && (e.Code == nil || *e.Code != tt.code) {
				t.Errorf("code = %v, want %q", e.Code, tt.code)
			}
		})
	}
	if n := len(ts.model.Requests()); n != 0 {
		t.Errorf("the model was called %d times for invalid requests", n)
	}
}

// responseEvent is one parsed Responses stream event.
type responseEvent struct {
	name string
	data struct {
		Type           string             `json:"type"`
		SequenceNumber *int               `json:"sequence_number"`
		Response       *openai.Response   `json:"response"`
		Item           *openai.OutputItem `json:"item"`
		ItemID         string             `json:"item_id"`
		OutputIndex    *int               `json:"output_index"`
		ContentIndex   *int               `json:"content_index"`
		Delta          string             `json:"delta"`
		Text           string             `json:"text"`
		Name           string             `json:"name"`
		Arguments      string             `json:"arguments"`
		Code           *string            `json:"code"`
		Message        string             `json:"message"`
	}
}

// readResponseEvents parses a Responses stream, checking the framing every
// event shares: a name equal to its type and increasing sequence numbers.
func readResponseEvents(tb testing.TB, r io.Reader) (events []responseEvent, comments []string) {
	tb.Helper()
	last := -1
	for _, e := range readSSE(tb, r) {
		if e.comment != "" {
			comments = append(comments, e.comment)
			continue
		}
		var ev responseEvent
		ev.name = e.event
		if err := json.Unmarshal([]byte(e.data), &ev.data); err != nil {
			tb.Fatalf("event %q: %v", e.data, err)
		}
		if ev.data.Type != e.event {
			tb.Errorf("event %q carries type %q", e.event, ev.data.Type)
		}
		if ev.data.SequenceNumber == nil || *ev.data.SequenceNumber <= last {
			tb.Errorf("event %s: sequence_number %v after %d", e.event, ev.data.SequenceNumber, last)
		} else {
			last = *ev.data.SequenceNumber
		}
		events = append(events, ev)
	}
	return events, comments
}

func eventNames(events []responseEvent) []string {
	var out []string
	for _, e := range events {
		out = append(out, e.name)
	}
	return out
}

func TestResponseStreaming(t *testing.T) {
	ts := MustServe(t, nil,
		scripted.Reply{ToolCalls: []llm.ToolCall{{ID: "c1", Name: "get_current_time", Arguments: `{}`}}},
		scripted.Reply{Content: "It is 15:52 UTC.", ChunkSize: 3},
	)
	resp := ts.post(t, "/v1/responses", `{"model":"nagent-test","stream":true,"input":"time?"}`)
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") || resp.Header.Get("X-Session-Id") == "" {
		t.Fatalf("Content-Type = %q, X-Session-Id = %q", ct, resp.Header.Get("X-Session-Id"))
	}
	events, comments := readResponseEvents(t, resp.Body)

	var names []string
	var deltas strings.Builder
	for _, e := range events {
		if n := len(names); n == 0 || names[n-1] != e.name {
			names = append(names, e.name)
		}
		if e.name == "response.output_text.delta" {
			deltas.WriteString(e.data.Delta)
		}
	}
	want := []string{"response.created", "response.in_progress", "response.output_item.added", "response.content_part.added",
		"response.output_text.delta", "response.output_text.done", "response.content_part.done", "response.output_item.done", "response.completed"}
	if !reflect.DeepEqual(names, want) {
		t.Fatalf("events = %q, want %q", names, want)
	}
	created, final := events[0].data.Response, events[len(events)-1].data.Response
	if created.Status != "in_progress" || created.ID != final.ID || created.Usage != nil {
		t.Errorf("created = %+v", created)
	}
	if final.Status != "completed" || final.Usage == nil || final.Usage.TotalTokens == 0 {
		t.Errorf("completed = %+v", final)
	}
	if got := outputTexts(*final); len(got) != 1 || got[0] != deltas.String() || got[0] != "It is 15:52 UTC." {
		t.Errorf("final text %q, deltas %q", got, deltas.String())
	}
	added := events[2].data
	if added.Item.Type != "message" || added.Item.Status != "in_progress" || added.Item.ID != final.Output[0].ID {
		t.Errorf("output_item.added = %+v", added.Item)
	}
	for _, e := range events[3:8] {
		if e.data.ItemID != added.Item.ID || *e.data.OutputIndex != 0 {
			t.Errorf("%s addresses item %q #%v", e.name, e.data.ItemID, e.data.OutputIndex)
		}
	}
	if len(comments) != 2 || !strings.Contains(comments[0], `"tool_started"`) || !strings.Contains(comments[1], `"tool_finished"`) {
		t.Errorf("agent comments = %q", comments)
	}

	// The streamed response is stored as completed.
	got := ts.get(t, "/v1/responses/"+final.ID)
	if stored := decode[openai.Response](t, got.Body); !reflect.DeepEqual(stored, *final) {
		t.Errorf("stored = %+v\nstreamed = %+v", stored, *final)
	}
}

const weatherTool = `"tools":[{"type":"function","name":"get_weather","description":"Weather for a city.",
	"parameters":{"type":"object","properties":{"city":{"type":"string"}}}}]`

func TestResponseClientToolRoundTrip(t *testing.T) {
	ts := MustServe(t, nil,
		scripted.Reply{ToolCalls: []llm.ToolCall{{ID: "call_w", Name: "get_weather", Arguments: `{"city":"Paris"}`}}},
		scripted.Reply{Content: "It is sunny in Paris."},
	)
	first, _ := ts.createResponse(t, `{"model":"nagent-test",`+weatherTool+`,"input":"Weather in Paris?"}`)
	if len(first.Output) != 1 {
		t.Fatalf("output = %+v, want one function_call", first.Output)
	}
	call := first.Output[0]
	if call.Type != "function_call" || !strings.HasPrefix(call.ID, "fc_") || call.CallID != "call_w" || call.Name != "get_weather" ||
		call.Arguments != `{"city":"Paris"}` || call.Status != "completed" || first.Status != "completed" {
		t.Fatalf("function_call item = %+v (status %s)", call, first.Status)
	}
	if len(first.Tools) != 1 || first.Tools[0].Name != "get_weather" {
		t.Errorf("tools echo = %+v", first.Tools)
	}
	if got := ts.model.Requests()[0].Tools; got[len(got)-1].Name != "get_weather" {
		t.Errorf("model saw tools %+v", got)
	}

	second, _ := ts.createResponse(t, `{"model":"nagent-test",`+weatherTool+`,"previous_response_id":"`+first.ID+`",
		"input":[{"type":"function_call_output","call_id":"call_w","output":"{\"sky\":\"sunny\"}"}]}`)
	if got := outputTexts(second); len(got) != 1 || got[0] != "It is sunny in Paris." {
		t.Errorf("answer = %q", got)
	}
	msgs := ts.model.Requests()[1].Messages
	if len(msgs) != 4 || msgs[2].Role != llm.RoleAssistant || len(msgs[2].ToolCalls) != 1 ||
		msgs[3].Role != llm.RoleTool || msgs[3].ToolCallID != "call_w" || msgs[3].Content != `{"sky":"sunny"}` {
		t.Errorf("second provider request = %+v", msgs)
	}
}

func TestResponseStatelessFunctionCallEcho(t *testing.T) {
	ts := MustServe(t, nil, scripted.Reply{Content: "Done."})
	ts.createResponse(t, `{"model":"nagent-test",`+weatherTool+`,"input":[
		{"role":"user","content":"Weather in Paris and Rome?"},
		{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Checking.","annotations":[]}]},
		{"type":"function_call","call_id":"a","name":"get_weather","arguments":"{\"city\":\"Paris\"}"},
		{"type":"function_call","call_id":"b","name":"get_weather","arguments":"{\"city\":\"Rome\"}"},
		{"type":"function_call_output","call_id":"a","output":"sunny"},
		{"type":"function_call_output","call_id":"b","output":[{"type":"input_text","text":"rain"}]}]}`)
	msgs := ts.model.Requests()[0].Messages[1:]
	if len(msgs) != 4 {
		t.Fatalf("provider messages = %+v", msgs)
	}
	if a := msgs[1]; a.Role != llm.RoleAssistant || a.Content != "Checking." || len(a.ToolCalls) != 2 || a.ToolCalls[1].ID != "b" {
		t.Errorf("assistant message = %+v, want the text and both calls merged", a)
	}
	if msgs[2].ToolCallID != "a" || msgs[3].ToolCallID != "b" || msgs[3].Content != "rain" {
		t.Errorf("tool messages = %+v %+v", msgs[2], msgs[3])
	}
}

func TestResponseStreamingFunctionCall(t *testing.T) {
	ts := MustServe(t, nil, scripted.Reply{ToolCalls: []llm.ToolCall{{ID: "call_w", Name: "get_weather", Arguments: `{"city":"Paris"}`}}})
	resp := ts.post(t, "/v1/responses", `{"model":"nagent-test","stream":true,`+weatherTool+`,"input":"Weather in Paris?"}`)
	events, _ := readResponseEvents(t, resp.Body)
	want := []string{"response.created", "response.in_progress", "response.output_item.added",
		"response.function_call_arguments.delta", "response.function_call_arguments.done", "response.output_item.done", "response.completed"}
	if got := eventNames(events); !reflect.DeepEqual(got, want) {
		t.Fatalf("events = %q, want %q", got, want)
	}
	added, delta, done, itemDone := events[2].data, events[3].data, events[4].data, events[5].data
	if added.Item.Type != "function_call" || added.Item.Status != "in_progress" || added.Item.CallID != "call_w" || added.Item.Arguments != "" {
		t.Errorf("added = %+v", added.Item)
	}
	if delta.ItemID != added.Item.ID || delta.Delta != `{"city":"Paris"}` || done.Arguments != `{"city":"Paris"}` || done.Name != "get_weather" {
		t.Errorf("arguments events = %+v / %+v", delta, done)
	}
	if itemDone.Item.Status != "completed" || itemDone.Item.Arguments != `{"city":"Paris"}` {
		t.Errorf("output_item.done = %+v", itemDone.Item)
	}
	final := events[6].data.Response
	if len(final.Output) != 1 || final.Output[0].ID != added.Item.ID || final.Output[0].CallID != "call_w" {
		t.Errorf("final output = %+v", final.Output)
	}
}

func TestGetResponse(t *testing.T) {
	ts := MustServe(t, nil, scripted.Reply{Content: "Stored."}, scripted.Reply{Content: "Not stored."})
	created, resp := ts.createResponse(t, `{"model":"nagent-test","input":"keep","metadata":{"session_id":"s-get"}}`)
	if resp.Header.Get("X-Session-Id") != "s-get" {
		t.Errorf("metadata.session_id did not bind the session: %q", resp.Header.Get("X-Session-Id"))
	}
	got := ts.get(t, "/v1/responses/"+created.ID)
	if got.StatusCode != 200 || got.Header.Get("X-Session-Id") != "s-get" {
		t.Fatalf("GET = %d, session %q", got.StatusCode, got.Header.Get("X-Session-Id"))
	}
	if stored := decode[openai.Response](t, got.Body); !reflect.DeepEqual(stored, created) {
		t.Errorf("stored = %+v\ncreated = %+v", stored, created)
	}

	t.Run("Unknown", func(t *testing.T) {
		got := ts.get(t, "/v1/responses/resp_missing")
		if got.StatusCode != 404 {
			t.Fatalf("status = %d", got.StatusCode)
		}
		if e := decode[errorBody](t, got.Body).Error; e.Type != "invalid_request_error" || !strings.Contains(e.Message, "resp_missing") {
			t.Errorf("error = %+v", e)
		}
	})

	t.Run("StoreFalse", func(t *testing.T) {
		r, _ := ts.createResponse(t, `{"model":"nagent-test","input":"forget","store":false}`)
		if r.Store {
			t.Error("store echoed true")
		}
		if got := ts.get(t, "/v1/responses/"+r.ID); got.StatusCode != 404 {
			t.Errorf("GET = %d, want 404", got.StatusCode)
		}
		resp := ts.post(t, "/v1/responses", `{"model":"nagent-test","input":"more","previous_response_id":"`+r.ID+`"}`)
		if resp.StatusCode != 400 {
			t.Errorf("previous_response_id of an unstored response = %d, want 400", resp.StatusCode)
		}
	})
}

func TestResponseProviderFailure(t *testing.T) {
	ts := MustServe(t, nil)
	ts.model.SetResponder(func(scripted.RecordedRequest) scripted.Reply {
		return scripted.Reply{Status: 500, ErrorMessage: "upstream exploded"}
	})
	resp := ts.post(t, "/v1/responses", `{"model":"nagent-test","input":"hi"}`)
	if resp.StatusCode != 502 || resp.Header.Get("X-Session-Id") == "" {
		t.Fatalf("status = %d, session %q", resp.StatusCode, resp.Header.Get("X-Session-Id"))
	}
	if e := decode[errorBody](t, resp.Body).Error; e.Type != "server_error" || !strings.Contains(e.Message, "HTTP 500") {
		t.Errorf("error = %+v", e)
	}
}

func TestResponseStreamingErrorMidStream(t *testing.T) {
	ts := MustServe(t, nil, scripted.Reply{Content: "This answer will break off", ChunkSize: 2, StreamErrorAfter: 3})
	resp := ts.post(t, "/v1/responses", `{"model":"nagent-test","stream":true,"input":"go"}`)
	events, _ := readResponseEvents(t, resp.Body)
	last := events[len(events)-1]
	if last.name != "error" || last.data.Message == "" || last.data.Code == nil {
		t.Fatalf("last event = %s %+v, want an error event", last.name, last.data)
	}
	if events[0].name != "response.created" {
		t.Fatalf("first event = %s", events[0].name)
	}
	// The id the client saw is stored as failed.
	got := ts.get(t, "/v1/responses/"+events[0].data.Response.ID)
	stored := decode[openai.Response](t, got.Body)
	if stored.Status != "failed" || stored.Error == nil || stored.Error.Message == "" {
		t.Errorf("stored = %+v", stored)
	}
	ts.app.Memory.Wait()
	st, _ := ts.app.DB.GetTaskState(context.Background(), resp.Header.Get("X-Session-Id"))
	if st == nil || st.Status != "failed" {
		t.Errorf("task state = %+v, want failed", st)
	}
}

func TestResponseIterationLimit(t *testing.T) {
	ts := MustServe(t, func(c *config.Config) { c.Agent.MaxIterations = 1 },
		scripted.Reply{ToolCalls: []llm.ToolCall{{ID: "c1", Name: "get_current_time", Arguments: `{}`}}})
	r, _ := ts.createResponse(t, `{"model":"nagent-test","input":"loop"}`)
	if r.Status != "incomplete" || r.IncompleteDetails == nil || r.IncompleteDetails.Reason != "max_output_tokens" {
		t.Fatalf("response = %+v", r)
	}
	if got := outputTexts(r); len(got) != 1 || !strings.Contains(got[0], "iteration limit") || r.Output[0].Status != "incomplete" {
		t.Errorf("output = %+v", r.Output)
	}
}
