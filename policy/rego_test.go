package policy_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/nagent/nagent/policy"
)

// TestBuiltinRegoTests runs the test_* rules shipped with the embedded
// defaults, as `nagent policy test` does.
func TestBuiltinRegoTests(t *testing.T) {
	results, err := policy.Test(context.Background(), "", policy.TestOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(results) < 20 {
		t.Errorf("ran %d tests, want the built-in suite (20+)", len(results))
	}
	var failed bool
	for _, r := range results {
		if !r.Pass() {
			failed = true
		}
	}
	if failed {
		var out bytes.Buffer
		policy.ReportTests(&out, results, false)
		t.Fatalf("built-in Rego tests failed:\n%s", out.String())
	}
}

const adminRule = `package nagent.tools

deny contains "cloud metadata endpoints are off limits" if {
	input.tool.name == "fetch_url"
	startswith(input.args.url, "http://169.254.169.254")
}
`

const adminTest = `package nagent.tools_test

import data.nagent.tools

call := {
	"phase": "call",
	"tool": {"name": "fetch_url", "source_type": "mcp", "risk_level": "low", "managed": false, "disabled": false},
	"args": {"url": "http://169.254.169.254/latest"},
	"agent_context": "primary", "tool_exposure_policy": "default", "permitted_managed_tools": [],
}

test_metadata_denied if {
	d := tools.decision with input as call
	"cloud metadata endpoints are off limits" in d.reasons
}

test_wrongly_expects_allow if {
	d := tools.decision with input as call
	d.allow
}
`

// TestAdminTests runs an admin's *_test.rego next to the built-in tests.
func TestAdminTests(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "metadata.rego", adminRule)
	writeFile(t, dir, "metadata_test.rego", adminTest)
	results, err := policy.Test(context.Background(), dir, policy.TestOptions{Run: "metadata|wrongly"})
	if err != nil {
		t.Fatal(err)
	}
	outcome := map[string]bool{}
	for _, r := range results {
		outcome[r.Name] = r.Pass()
	}
	if len(outcome) != 2 || !outcome["test_metadata_denied"] || outcome["test_wrongly_expects_allow"] {
		t.Errorf("outcomes = %v", outcome)
	}
	var out bytes.Buffer
	policy.ReportTests(&out, results, false)
	if !strings.Contains(out.String(), "FAIL: 1/2") || !strings.Contains(out.String(), "test_wrongly_expects_allow") {
		t.Errorf("report:\n%s", out.String())
	}
}

func TestCheck(t *testing.T) {
	t.Run("Good", func(t *testing.T) {
		dir := t.TempDir()
		writeFile(t, dir, "metadata.rego", adminRule)
		writeFile(t, dir, "metadata_test.rego", adminTest)
		res, err := policy.Check(context.Background(), dir, policy.CheckOptions{})
		if err != nil {
			t.Fatal(err)
		}
		e := MustNewEngine(t, policy.Options{Dir: dir})
		if res.Revision != e.Revision() || !res.ExposeCache || len(res.Files) != 6 {
			t.Errorf("Check = %+v; engine revision %s", res, e.Revision())
		}
	})
	var checkTests = []struct {
		name, file, body, want string
		strict                 bool
	}{
		{"Parse", "a.rego", "package nagent.tools\n\ndeny contains \"x\" if input.tool.name == \"a\" }\n", "a.rego:3: rego_parse_error", false},
		{"Type", "b.rego", "package nagent.tools\n\ndeny contains \"x\" if count(1) > 0\n", "b.rego:3: rego_type_error", false},
		{"UnsafeVar", "c.rego", "package nagent.tools\n\ndeny contains msg if input.tool.name == \"a\"\n", "c.rego:3: rego_unsafe_var_error", false},
		{"RuleKindClash", "d.rego", "package nagent.tools\n\ndeny := true\n", "d.rego:3: rego_type_error", false},
		{"DataClash", "data.json", `{"nagent": {"tools": {"deny": 1}}}`, "rego_compile_error", false},
		{"StrictUnusedVar", "e.rego", "package nagent.tools\n\ndeny contains \"x\" if {\n\tx := 1\n\tinput.tool.name == \"a\"\n}\n", "e.rego:4: rego_compile_error", true},
		{"BrokenTest", "f_test.rego", "package nagent.tools_test\n\ntest_x if {\n", "f_test.rego:4: rego_parse_error", false},
	}
	for _, tt := range checkTests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFile(t, dir, tt.file, tt.body)
			_, err := policy.Check(context.Background(), dir, policy.CheckOptions{Strict: tt.strict})
			var le *policy.LoadError
			if !errors.As(err, &le) || !strings.Contains(le.Error(), tt.want) {
				t.Errorf("Check = %v, want a problem mentioning %q", err, tt.want)
			}
		})
	}
}
