package tui

import (
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
)

var markdownTests = []struct {
	name, in string
	width    int
	want     string // with styles stripped
}{
	{"Emphasis", "It is **noon** in *UTC*, ~~not~~ `12:00`.", 80, "It is noon in UTC, not 12:00."},
	{"Heading", "# Title\n\nBody text.", 80, "Title\n\nBody text."},
	{"TightList", "- one\n- two\n  - nested", 80, "• one\n• two\n  • nested"},
	{"OrderedList", "3. three\n4. four", 80, "3. three\n4. four"},
	{"Code", "```go\nfmt.Println(1)\n```", 80, "  fmt.Println(1)"},
	{"Quote", "> quoted words", 80, "│ quoted words"},
	{"Link", "see [the docs](https://example.com/docs)", 80, "see the docs (https://example.com/docs)"},
	{"Wrap", "alpha beta gamma delta epsilon", 12, "alpha beta\ngamma delta\nepsilon"},
	{"ListWrapIndents", "- alpha beta gamma delta", 14, "• alpha beta\n  gamma delta"},
	{"Table", "| a | b |\n|---|---|\n| 1 | 2 |", 80, "a │ b\n1 │ 2"},
	{"Tasks", "- [x] done\n- [ ] todo", 80, "• [x] done\n• [ ] todo"},
}

func TestRenderMarkdown(t *testing.T) {
	for _, tc := range markdownTests {
		t.Run(tc.name, func(t *testing.T) {
			out := renderMarkdown(tc.in, tc.width)
			if got := ansi.Strip(out); got != tc.want {
				t.Errorf("got\n%s\nwant\n%s", got, tc.want)
			}
			for _, l := range strings.Split(out, "\n") {
				if ansi.StringWidth(l) > tc.width {
					t.Errorf("line %q is wider than %d", ansi.Strip(l), tc.width)
				}
			}
		})
	}
}
