package tui

import (
	"fmt"
	"strings"

	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	east "github.com/yuin/goldmark/extension/ast"
	"github.com/yuin/goldmark/text"
)

// The Markdown renderer is small and our own: glamour would bring chroma,
// whose package initialisation alone adds 60-260 ms to every nagent
// command on this machine, the TUI or not.

var (
	mdParser = goldmark.New(goldmark.WithExtensions(extension.GFM)).Parser()

	mdHeading = lipgloss.NewStyle().Bold(true).Foreground(lipgloss.Color("5"))
	mdStrong  = lipgloss.NewStyle().Bold(true)
	mdEm      = lipgloss.NewStyle().Italic(true)
	mdStrike  = lipgloss.NewStyle().Strikethrough(true)
	mdCode    = lipgloss.NewStyle().Foreground(lipgloss.Color("3"))
	mdLink    = lipgloss.NewStyle().Underline(true).Foreground(lipgloss.Color("4"))
	mdQuote   = lipgloss.NewStyle().Faint(true)
)

// renderMarkdown renders src as styled terminal text wrapped to width.
func renderMarkdown(src string, width int) string {
	source := []byte(src)
	doc := mdParser.Parse(text.NewReader(source))
	r := &mdRenderer{src: source}
	lines := r.blocks(doc, max(width, 10))
	return strings.TrimRight(strings.Join(lines, "\n"), "\n")
}

type mdRenderer struct{ src []byte }

// blocks renders the block children of n, separated by blank lines.
func (r *mdRenderer) blocks(n ast.Node, width int) []string {
	var out []string
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		lines := r.block(c, width)
		if len(lines) == 0 {
			continue
		}
		if len(out) > 0 && !isTight(c) {
			out = append(out, "")
		}
		out = append(out, lines...)
	}
	return out
}

// isTight reports whether c sits in a tight list item, which keeps its
// blocks together without blank lines.
func isTight(c ast.Node) bool {
	if _, ok := c.Parent().(*ast.ListItem); ok {
		if l, ok := c.Parent().Parent().(*ast.List); ok {
			return l.IsTight
		}
	}
	return false
}

func (r *mdRenderer) block(n ast.Node, width int) []string {
	switch n := n.(type) {
	case *ast.Paragraph, *ast.TextBlock:
		return wrapLines(r.inline(n), width)
	case *ast.Heading:
		return wrapLines(mdHeading.Render(r.inline(n)), width)
	case *ast.ThematicBreak:
		return []string{mdQuote.Render(strings.Repeat("─", min(width, 40)))}
	case *ast.FencedCodeBlock, *ast.CodeBlock, *ast.HTMLBlock:
		var out []string
		lines := n.Lines()
		for i := 0; i < lines.Len(); i++ {
			seg := lines.At(i)
			l := strings.TrimRight(string(seg.Value(r.src)), "\n")
			out = append(out, mdCode.Render(ansi.Truncate("  "+strings.ReplaceAll(l, "\t", "    "), width, "…")))
		}
		return out
	case *ast.Blockquote:
		inner := r.blocks(n, width-2)
		for i, l := range inner {
			inner[i] = mdQuote.Render("│ " + l)
		}
		return inner
	case *ast.List:
		return r.list(n, width)
	case *east.Table:
		return r.table(n, width)
	}
	if n.Type() == ast.TypeBlock {
		return r.blocks(n, width)
	}
	return wrapLines(r.inline(n), width)
}

func (r *mdRenderer) list(l *ast.List, width int) []string {
	var out []string
	num := l.Start
	for item := l.FirstChild(); item != nil; item = item.NextSibling() {
		marker := "• "
		if l.IsOrdered() {
			marker = fmt.Sprintf("%d. ", num)
			num++
		}
		pad := strings.Repeat(" ", ansi.StringWidth(marker))
		inner := r.blocks(item, width-len(pad))
		if len(inner) == 0 {
			inner = []string{""}
		}
		if !l.IsTight && len(out) > 0 {
			out = append(out, "")
		}
		for i, line := range inner {
			if i == 0 {
				out = append(out, marker+line)
			} else {
				out = append(out, pad+line)
			}
		}
	}
	return out
}

func (r *mdRenderer) table(t *east.Table, width int) []string {
	var out []string
	for row := t.FirstChild(); row != nil; row = row.NextSibling() {
		var cells []string
		for c := row.FirstChild(); c != nil; c = c.NextSibling() {
			cells = append(cells, r.inline(c))
		}
		line := strings.Join(cells, " │ ")
		if _, ok := row.(*east.TableHeader); ok {
			line = mdStrong.Render(line)
		}
		out = append(out, ansi.Truncate(line, width, "…"))
	}
	return out
}

// inline renders the inline children of n as one styled string.
func (r *mdRenderer) inline(n ast.Node) string {
	var sb strings.Builder
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		switch c := c.(type) {
		case *ast.Text:
			sb.Write(c.Segment.Value(r.src))
			switch {
			case c.HardLineBreak():
				sb.WriteString("\n")
			case c.SoftLineBreak():
				sb.WriteString(" ")
			}
		case *ast.String:
			sb.Write(c.Value)
		case *ast.CodeSpan:
			sb.WriteString(mdCode.Render(r.inline(c)))
		case *ast.Emphasis:
			if c.Level >= 2 {
				sb.WriteString(mdStrong.Render(r.inline(c)))
			} else {
				sb.WriteString(mdEm.Render(r.inline(c)))
			}
		case *east.Strikethrough:
			sb.WriteString(mdStrike.Render(r.inline(c)))
		case *ast.Link:
			label, dest := r.inline(c), string(c.Destination)
			sb.WriteString(mdLink.Render(label))
			if dest != "" && dest != ansi.Strip(label) {
				sb.WriteString(" (" + dest + ")")
			}
		case *ast.AutoLink:
			sb.WriteString(mdLink.Render(string(c.URL(r.src))))
		case *ast.Image:
			sb.WriteString("[image: " + r.inline(c) + "]")
		case *east.TaskCheckBox:
			if c.IsChecked {
				sb.WriteString("[x] ")
			} else {
				sb.WriteString("[ ] ")
			}
		case *ast.RawHTML:
			for i := 0; i < c.Segments.Len(); i++ {
				seg := c.Segments.At(i)
				sb.Write(seg.Value(r.src))
			}
		default:
			sb.WriteString(r.inline(c))
		}
	}
	return sb.String()
}

func wrapLines(s string, width int) []string {
	return strings.Split(ansi.Wrap(s, max(width, 10), ""), "\n")
}
