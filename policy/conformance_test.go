package policy_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/nagent/nagent/policy"
	"github.com/nagent/nagent/runtime/tools"
)

// conformanceCase is one file under testdata/: an input document and the
// decision the policy set must take for it.
type conformanceCase struct {
	// Decision names the package decided: tools (default) or memory.
	Decision string `yaml:"decision"`
	// Policies are admin files written to the policy directory, by name.
	Policies map[string]string `yaml:"policies"`
	// Input is the input document, exactly as Rego sees it.
	Input map[string]any `yaml:"input"`
	Want  struct {
		Allow   bool `yaml:"allow"`
		Confirm bool `yaml:"confirm"`
		// Reasons: each must be a substring of a reason, in order; an empty
		// list means no reasons at all; absent means not checked.
		Reasons []string `yaml:"reasons"`
		// Constraints must equal the decision's; absent means not checked.
		Constraints map[string]any `yaml:"constraints"`
		// Error: the evaluation must fail with this substring (and deny).
		Error string `yaml:"error"`
		// LoadError: loading the admin files must fail with this substring;
		// the decision is then the last good set's.
		LoadError string `yaml:"load_error"`
	} `yaml:"want"`
}

// TestConformance runs every case under testdata/ against the embedded
// defaults plus the case's admin files.
func TestConformance(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no conformance cases: %v", err)
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".yaml"), func(t *testing.T) {
			tc := readCase(t, file)
			dir := t.TempDir()
			for name, body := range tc.Policies {
				writeFile(t, dir, name, body)
			}
			e := MustNewEngine(t, policy.Options{Dir: dir})
			switch loadErr := e.LastError(); {
			case tc.Want.LoadError == "" && loadErr != nil:
				t.Fatalf("load error: %v", loadErr)
			case tc.Want.LoadError != "" && (loadErr == nil || !strings.Contains(loadErr.Error(), tc.Want.LoadError)):
				t.Fatalf("load error = %v, want it to mention %q", loadErr, tc.Want.LoadError)
			}

			ctx := context.Background()
			var got tools.Decision
			if tc.Decision == "memory" {
				d, err := e.EvalMemory(ctx, tc.Input)
				checkEvalError(t, err, tc.Want.Error)
				got = tools.Decision{Allow: d.Allow, Reasons: d.Reasons}
			} else {
				d, err := e.EvalTools(ctx, tc.Input)
				checkEvalError(t, err, tc.Want.Error)
				got = d
				// The typed path (tools.Policy) must agree with the raw document.
				if in, ok := typedInput(tc.Input); ok {
					typed, err := e.Decide(ctx, in)
					checkEvalError(t, err, tc.Want.Error)
					if !reflect.DeepEqual(normalise(typed), normalise(d)) {
						t.Errorf("Decide = %+v, but the input document gives %+v", typed, d)
					}
				}
			}
			checkDecision(t, got, tc)
		})
	}
}

func readCase(tb testing.TB, file string) conformanceCase {
	tb.Helper()
	raw, err := os.ReadFile(file)
	if err != nil {
		tb.Fatal(err)
	}
	var tc conformanceCase
	dec := yaml.NewDecoder(strings.NewReader(string(raw)))
	dec.KnownFields(true)
	if err := dec.Decode(&tc); err != nil {
		tb.Fatalf("%s: %v", file, err)
	}
	return tc
}

func checkEvalError(tb testing.TB, err error, want string) {
	tb.Helper()
	switch {
	case want == "" && err != nil:
		tb.Errorf("evaluation failed: %v", err)
	case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
		tb.Errorf("evaluation error = %v, want it to mention %q", err, want)
	}
}

func checkDecision(tb testing.TB, got tools.Decision, tc conformanceCase) {
	tb.Helper()
	w := tc.Want
	if got.Allow != w.Allow || got.Confirm != w.Confirm {
		tb.Errorf("allow, confirm = %t, %t, want %t, %t (reasons %q)", got.Allow, got.Confirm, w.Allow, w.Confirm, got.Reasons)
	}
	if w.Reasons != nil {
		if len(w.Reasons) == 0 && len(got.Reasons) != 0 {
			tb.Errorf("reasons = %q, want none", got.Reasons)
		}
		if len(got.Reasons) < len(w.Reasons) {
			tb.Errorf("reasons = %q, want %d matching %q", got.Reasons, len(w.Reasons), w.Reasons)
		} else {
			for i, sub := range w.Reasons {
				if !strings.Contains(got.Reasons[i], sub) {
					tb.Errorf("reasons[%d] = %q, want it to mention %q", i, got.Reasons[i], sub)
				}
			}
		}
	}
	if w.Constraints != nil {
		want, _ := json.Marshal(w.Constraints)
		have, _ := json.Marshal(got.Constraints)
		if len(got.Constraints) == 0 {
			have = []byte("{}")
		}
		if !jsonEqual(want, have) {
			tb.Errorf("constraints = %s, want %s", have, want)
		}
	}
}

func jsonEqual(a, b []byte) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && reflect.DeepEqual(x, y)
}

func normalise(d tools.Decision) string {
	b, _ := json.Marshal(d)
	return string(b)
}

// typedInput converts a complete input document into the tools.PolicyInput
// that produces it, or reports that the document has no typed equivalent
// (a missing key, an unknown phase).
func typedInput(doc map[string]any) (tools.PolicyInput, bool) {
	var in tools.PolicyInput
	phase, _ := doc["phase"].(string)
	if phase != "expose" && phase != "call" {
		return in, false
	}
	for _, k := range []string{"tool", "session", "agent_context", "tool_exposure_policy", "execution_context_mode", "trusted_metadata", "permitted_managed_tools", "time"} {
		if _, ok := doc[k]; !ok {
			return in, false
		}
	}
	var shape struct {
		Tool    tools.ToolDefinition `json:"tool"`
		Session struct {
			ID     string `json:"id"`
			Source string `json:"source"`
		} `json:"session"`
		AgentContext          string          `json:"agent_context"`
		ToolExposurePolicy    string          `json:"tool_exposure_policy"`
		ExecutionContextMode  string          `json:"execution_context_mode"`
		TrustedMetadata       map[string]any  `json:"trusted_metadata"`
		PermittedManagedTools []string        `json:"permitted_managed_tools"`
		Time                  time.Time       `json:"time"`
		Args                  json.RawMessage `json:"args"`
	}
	raw, _ := json.Marshal(doc)
	if err := json.Unmarshal(raw, &shape); err != nil {
		return in, false
	}
	return tools.PolicyInput{
		Phase: tools.Phase(phase), Tool: shape.Tool, Args: shape.Args, Time: shape.Time,
		Exec: tools.ExecutionContext{
			SessionID: shape.Session.ID, Source: shape.Session.Source, AgentContext: shape.AgentContext,
			ToolExposurePolicy: shape.ToolExposurePolicy, ExecutionContextMode: shape.ExecutionContextMode,
			TrustedMetadata: shape.TrustedMetadata, PermittedManagedTools: shape.PermittedManagedTools,
		},
	}, true
}
