package tui

import (
	"fmt"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"
)

var (
	styleHeader  = lipgloss.NewStyle().Reverse(true).Bold(true)
	styleUser    = lipgloss.NewStyle().Bold(true).Foreground(lipgloss.Color("6"))
	styleTool    = lipgloss.NewStyle().Foreground(lipgloss.Color("4"))
	styleToolOK  = lipgloss.NewStyle().Foreground(lipgloss.Color("2"))
	styleToolErr = lipgloss.NewStyle().Foreground(lipgloss.Color("1"))
	styleDenied  = lipgloss.NewStyle().Bold(true).Foreground(lipgloss.Color("0")).Background(lipgloss.Color("3"))
	styleDim     = lipgloss.NewStyle().Faint(true)
	styleTitle   = lipgloss.NewStyle().Bold(true)
	styleError   = lipgloss.NewStyle().Bold(true).Foreground(lipgloss.Color("1"))
	styleConfirm = lipgloss.NewStyle().Border(lipgloss.NormalBorder()).BorderForeground(lipgloss.Color("3")).Padding(0, 1)
	styleCursor  = lipgloss.NewStyle().Reverse(true)
)

// resize lays the screen out for a terminal of w×h cells.
func (m *Model) resize(w, h int) {
	m.width, m.height = max(w, 20), max(h, 6)
	m.input.SetWidth(m.width - 3)
	m.vp.SetWidth(m.width)
	m.vp.SetHeight(m.bodyHeight())
	m.refresh(false)
}

// bodyHeight is the number of rows for the conversation or a picker.
func (m *Model) bodyHeight() int {
	h := m.height - 3 // header, input, footer
	if m.pending != nil {
		h -= lipgloss.Height(m.confirmView())
	}
	return max(h, 1)
}

// refresh re-renders the conversation into the viewport, following the end
// when it was at the end (or when bottom is set).
func (m *Model) refresh(bottom bool) {
	follow := bottom || m.vp.AtBottom()
	var sb strings.Builder
	for i, e := range m.entries {
		if i > 0 {
			sb.WriteString("\n")
		}
		sb.WriteString(m.renderEntry(e))
		sb.WriteString("\n")
	}
	m.vp.SetContent(strings.TrimRight(sb.String(), "\n"))
	if follow {
		m.vp.GotoBottom()
	}
}

func wrap(s string, w int) string { return ansi.Wrap(s, max(w, 10), "") }

// indent prefixes every line of s.
func indent(s, prefix string) string {
	return prefix + strings.ReplaceAll(s, "\n", "\n"+prefix)
}

// renderEntry renders e at the current width; entries that no longer
// change (all but tool blocks and the streaming answer) are cached.
func (m *Model) renderEntry(e *entry) string {
	if e.kind == entryTool || (e.kind == entryAssistant && !e.final) {
		return m.renderFresh(e)
	}
	if e.cacheWidth != m.width {
		e.cache, e.cacheWidth = m.renderFresh(e), m.width
	}
	return e.cache
}

func (m *Model) renderFresh(e *entry) string {
	w := m.width
	switch e.kind {
	case entryUser:
		s := indent(wrap(e.text, w-2), "  ")
		return styleUser.Render("›" + s[1:])
	case entryAssistant:
		if !e.final {
			return wrap(e.text, w)
		}
		return renderMarkdown(e.text, w)
	case entryTool:
		return m.renderTool(e.tool, w)
	case entryNotice:
		return styleTitle.Render("── "+e.title) + "\n" + styleDim.Render(wrap(e.text, w))
	case entryError:
		return styleError.Render(wrap("✗ "+e.text, w))
	}
	return ""
}

// renderTool draws a tool block: one line collapsed, with the arguments and
// the result when expanded. Denials carry their own label and colour.
func (m *Model) renderTool(t *toolBlock, w int) string {
	arrow := "▸"
	if m.expanded {
		arrow = "▾"
	}
	var icon, label string
	switch t.status {
	case "running":
		icon, label = "…", styleTool.Render("running "+fmtDuration(m.now().Sub(t.started)))
	case "success":
		icon, label = styleToolOK.Render("✓"), styleToolOK.Render("ok "+fmtDuration(t.duration))
	case "denied":
		icon, label = styleDenied.Render("⊘"), styleDenied.Render(" DENIED ")+" "+styleDim.Render(denialReason(t.content))
	case "cancelled":
		icon, label = styleToolErr.Render("✗"), styleToolErr.Render("cancelled")
	default:
		icon, label = styleToolErr.Render("✗"), styleToolErr.Render(t.status+" "+fmtDuration(t.duration))
	}
	head := ansi.Truncate(fmt.Sprintf("%s %s tool %s · %s", arrow, icon, styleTitle.Render(t.name), label), w, "…")
	if !m.expanded {
		return head
	}
	var sb strings.Builder
	sb.WriteString(head)
	if t.args != "" {
		sb.WriteString("\n" + indent(wrap("args: "+t.args, w-4), "  │ "))
	}
	if t.content != "" {
		res := t.content
		lines := strings.Split(res, "\n")
		if len(lines) > 8 {
			res = strings.Join(lines[:8], "\n") + fmt.Sprintf("\n… %d more lines", len(lines)-8)
		}
		sb.WriteString("\n" + styleDim.Render(indent(wrap("result: "+res, w-4), "  │ ")))
	}
	return sb.String()
}

// denialReason shortens the model-facing denial text for the block header.
func denialReason(content string) string {
	if _, why, ok := strings.Cut(content, " denied: "); ok {
		return why
	}
	return content
}

func fmtDuration(d time.Duration) string {
	switch {
	case d <= 0:
		return "0 ms"
	case d < time.Second:
		return fmt.Sprintf("%d ms", d.Milliseconds())
	default:
		return fmt.Sprintf("%.1f s", d.Seconds())
	}
}

// confirmView is the confirmation prompt of a pending confirm decision.
func (m *Model) confirmView() string {
	req := m.pending
	w := m.width - 4
	var sb strings.Builder
	sb.WriteString(styleTitle.Render("Allow tool call "+req.def.Name+"?") + " (policy: confirm)\n")
	if req.call.Arguments != "" {
		sb.WriteString(ansi.Truncate("args: "+req.call.Arguments, w, "…") + "\n")
	}
	if len(req.reasons) > 0 {
		sb.WriteString(ansi.Truncate("why: "+strings.Join(req.reasons, "; "), w, "…") + "\n")
	}
	sb.WriteString(ansi.Truncate("[y] allow once  [a] allow always (session)  [n/Enter/Esc] deny", w, "…"))
	return styleConfirm.Width(m.width).Render(sb.String())
}

// pickerView lists the picker's items around the cursor.
func (m *Model) pickerView(h int) string {
	title := "Sessions · Enter resume · Esc close · ↑/↓ move"
	if m.mode == modeModels {
		title = "Models · Enter pick · Esc close · ↑/↓ move"
	}
	lines := []string{styleTitle.Render(ansi.Truncate(title, m.width, "…"))}
	rows := max(h-1, 1)
	first := 0
	if m.cursor >= rows {
		first = m.cursor - rows + 1
	}
	for i := first; i < len(m.picks) && i < first+rows; i++ {
		line := ansi.Truncate(m.picks[i].label, m.width-2, "…")
		if i == m.cursor {
			line = styleCursor.Render("> " + line)
		} else {
			line = "  " + line
		}
		lines = append(lines, line)
	}
	for len(lines) < h {
		lines = append(lines, "")
	}
	return strings.Join(lines, "\n")
}

func (m *Model) header() string {
	state := "idle"
	switch {
	case m.cancelling:
		state = "cancelling"
	case m.pending != nil:
		state = "waiting for you"
	case m.running:
		state = "running"
	}
	s := fmt.Sprintf(" N-Agent · session %s · model %s · %s", shortID(m.session), m.currentModel(), state)
	s = ansi.Truncate(s, m.width, "…")
	return styleHeader.Render(s + strings.Repeat(" ", max(m.width-ansi.StringWidth(s), 0)))
}

func (m *Model) footer() string {
	s := m.status
	if s == "" {
		switch {
		case m.pending != nil:
			s = "y allow once · a allow always · n/Enter/Esc deny"
		case m.mode != modeChat:
			s = "Enter select · Esc close"
		case m.cancelling:
			s = "cancelling… Ctrl-C again quits"
		case m.running:
			s = "running… Ctrl-C cancels the turn · Ctrl-O tool details"
		default:
			s = "Enter send · /help · Ctrl-O tool details · PgUp/PgDn scroll · Ctrl-C quit"
		}
	}
	return styleDim.Render(ansi.Truncate(s, m.width, "…"))
}

// View implements tea.Model.
func (m *Model) View() tea.View {
	var v tea.View
	v.AltScreen = true
	v.WindowTitle = "nagent tui"
	if m.quitting {
		return v
	}
	v.SetContent(m.render())
	return v
}

// render draws the whole screen as text.
func (m *Model) render() string {
	h := m.bodyHeight()
	if m.vp.Height() != h {
		m.vp.SetHeight(h)
	}
	parts := []string{m.header()}
	if m.mode == modeChat {
		body := m.vp.View()
		if n := lipgloss.Height(body); n < h {
			body += strings.Repeat("\n", h-n)
		}
		parts = append(parts, body)
	} else {
		parts = append(parts, m.pickerView(h))
	}
	if m.pending != nil {
		parts = append(parts, m.confirmView())
	}
	parts = append(parts, m.input.View(), m.footer())
	return strings.Join(parts, "\n")
}
