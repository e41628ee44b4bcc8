package tui

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"charm.land/bubbles/v2/textinput"
	"charm.land/bubbles/v2/viewport"
	tea "charm.land/bubbletea/v2"

	"github.com/nagent/nagent/runtime/agent"
	"github.com/nagent/nagent/runtime/errs"
	"github.com/nagent/nagent/runtime/memory"
	"github.com/nagent/nagent/store"
)

// mode is what the keyboard drives.
type mode int

const (
	modeChat mode = iota
	modeSessions
	modeModels
)

// tickMsg refreshes the durations of running tool blocks.
type tickMsg struct{}

func tick() tea.Cmd {
	return tea.Tick(250*time.Millisecond, func(time.Time) tea.Msg { return tickMsg{} })
}

// eventMsg carries one loop event of turn number turn.
type eventMsg struct {
	turn int
	ev   agent.Event
}

// turnDoneMsg says that turn number turn has ended.
type turnDoneMsg struct {
	turn int
	res  *agent.Result
	err  error
}

// entryKind is the kind of one block of the conversation view.
type entryKind int

const (
	entryUser entryKind = iota
	entryAssistant
	entryTool
	entryNotice
	entryError
)

// entry is one block of the conversation view.
type entry struct {
	kind  entryKind
	title string // notices
	text  string
	// final marks an assistant message that has finished streaming; it is
	// rendered as Markdown.
	final bool
	tool  *toolBlock

	cache      string // rendered text of a final entry
	cacheWidth int
}

// toolBlock is one tool call shown as a collapsible block.
type toolBlock struct {
	id, name, args string
	status         string // running, success, error, denied, cancelled
	content        string
	started        time.Time
	duration       time.Duration
}

// pickItem is one row of a picker.
type pickItem struct {
	id    string
	label string
}

// Options configure a Model.
type Options struct {
	// Session is the session the conversation starts in.
	Session string
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Model is the bubbletea model of `nagent tui`. Turns run on their own
// goroutine and report through an inbox that Run forwards to the program
// (tests read it directly with Inbox).
type Model struct {
	ctx   context.Context
	b     Backend
	now   func() time.Time
	inbox chan tea.Msg
	quit  chan struct{} // closed when the UI ends
	once  sync.Once
	conf  *confirmer
	turns sync.WaitGroup

	width, height int
	vp            viewport.Model
	input         textinput.Model
	entries       []*entry
	expanded      bool // tool blocks show arguments and results
	ticking       bool // a tick is scheduled for running tool blocks

	session string
	model   string // the picked model; "" is the configured one
	models  []string

	turn       int
	running    bool
	cancelling bool
	sawFinish  bool
	cancel     context.CancelFunc
	streaming  *entry // the assistant entry receiving deltas
	pending    *confirmRequest

	mode   mode
	picks  []pickItem
	cursor int

	status   string // a one-off hint shown in the footer
	quitting bool
}

var _ tea.Model = (*Model)(nil)

// New returns the UI model over b. ctx bounds every turn.
func New(ctx context.Context, b Backend, opts Options) *Model {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	m := &Model{
		ctx: ctx, b: b, now: opts.Now,
		inbox:   make(chan tea.Msg, 256),
		quit:    make(chan struct{}),
		session: opts.Session,
		width:   80, height: 24,
	}
	m.conf = newConfirmer(m.post)
	m.models = b.Models()
	m.input = textinput.New()
	m.input.Prompt = "› "
	m.input.Placeholder = "Message, or /help"
	m.input.Focus()
	m.vp = viewport.New()
	m.vp.SoftWrap = false
	m.vp.KeyMap.Left.SetEnabled(false)
	m.vp.KeyMap.Right.SetEnabled(false)
	m.resize(80, 24)
	return m
}

// Inbox delivers the messages of running turns; Run forwards them to the
// program.
func (m *Model) Inbox() <-chan tea.Msg { return m.inbox }

// Done is closed when the UI has quit.
func (m *Model) Done() <-chan struct{} { return m.quit }

// Wait waits for the running turn's goroutine to end.
func (m *Model) Wait() { m.turns.Wait() }

// post hands msg to the UI; it gives up when the UI has quit or ctx ends.
func (m *Model) post(ctx context.Context, msg any) bool {
	select {
	case m.inbox <- msg:
		return true
	case <-m.quit:
		return false
	case <-ctx.Done():
		return false
	}
}

// LoadHistory shows a stored session's messages (after a resume).
func (m *Model) LoadHistory(msgs []*store.Message, calls []*store.ToolCall) {
	m.entries = historyEntries(msgs, calls)
	m.refresh(true)
}

// Init implements tea.Model.
func (m *Model) Init() tea.Cmd { return textinput.Blink }

// Update implements tea.Model.
func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.resize(msg.Width, msg.Height)
		return m, nil
	case eventMsg:
		if msg.turn != m.turn {
			return m, nil
		}
		m.onEvent(msg.ev)
		if msg.ev.Type == agent.EventToolStarted && !m.ticking {
			// Running tool blocks show their time so far.
			m.ticking = true
			return m, tick()
		}
		return m, nil
	case tickMsg:
		if !m.anyToolRunning() {
			m.ticking = false
			return m, nil
		}
		m.refresh(false)
		return m, tick()
	case turnDoneMsg:
		if msg.turn == m.turn {
			m.onTurnDone(msg.res, msg.err)
		}
		return m, nil
	case confirmMsg:
		if !m.running || m.cancelling {
			msg.req.reply <- answerDeny
			return m, nil
		}
		m.pending = msg.req
		m.status = ""
		m.mode = modeChat
		return m, nil
	case tea.KeyPressMsg:
		return m.onKey(msg)
	}
	var cmd tea.Cmd
	m.input, cmd = m.input.Update(msg)
	return m, cmd
}

func (m *Model) onKey(k tea.KeyPressMsg) (tea.Model, tea.Cmd) {
	key := k.String()
	m.status = ""
	if key == "ctrl+c" {
		return m.interrupt()
	}
	if m.pending != nil {
		switch key {
		case "y", "Y":
			m.answer(answerOnce)
		case "a", "A":
			m.answer(answerAlways)
		case "n", "N", "enter", "esc":
			// The default is deny: Enter alone never approves.
			m.answer(answerDeny)
		default:
			m.status = "answer y (allow once), a (allow always in this session) or n (deny)"
		}
		return m, nil
	}
	switch m.mode {
	case modeSessions, modeModels:
		return m.onPickerKey(key)
	}
	switch key {
	case "enter":
		line := strings.TrimSpace(m.input.Value())
		if line == "" {
			return m, nil
		}
		m.input.Reset()
		if strings.HasPrefix(line, "/") {
			return m.command(line)
		}
		if m.running {
			m.input.SetValue(line)
			m.status = "a turn is running: wait for it, or /cancel it"
			return m, nil
		}
		m.startTurn(line)
		return m, nil
	case "ctrl+o":
		m.expanded = !m.expanded
		m.refresh(false)
		return m, nil
	case "pgup", "pgdown", "up", "down", "ctrl+u", "ctrl+d", "home", "end":
		switch key {
		case "home":
			m.vp.GotoTop()
		case "end":
			m.vp.GotoBottom()
		default:
			m.vp, _ = m.vp.Update(k)
		}
		return m, nil
	}
	var cmd tea.Cmd
	m.input, cmd = m.input.Update(k)
	return m, cmd
}

// interrupt is Ctrl-C: it cancels the running turn, and quits when no
// turn runs or the turn is already being cancelled.
func (m *Model) interrupt() (tea.Model, tea.Cmd) {
	if m.running && !m.cancelling {
		m.cancelTurn()
		m.status = "cancelling the turn; press Ctrl-C again to quit"
		return m, nil
	}
	return m, m.quitCmd()
}

func (m *Model) quitCmd() tea.Cmd {
	m.quitting = true
	if m.cancel != nil {
		m.cancel()
	}
	m.once.Do(func() { close(m.quit) })
	return tea.Quit
}

func (m *Model) cancelTurn() {
	if !m.running || m.cancelling {
		return
	}
	m.cancelling = true
	if m.pending != nil {
		m.answer(answerDeny)
	}
	m.cancel()
}

func (m *Model) answer(a answer) {
	req := m.pending
	m.pending = nil
	req.reply <- a
	switch a {
	case answerDeny:
		m.status = "denied " + req.def.Name
	case answerAlways:
		m.status = "allowed " + req.def.Name + " for the rest of this session"
	}
}

func (m *Model) startTurn(text string) {
	m.turn++
	id := m.turn
	ctx, cancel := context.WithCancel(m.ctx)
	m.cancel = cancel
	m.running, m.cancelling, m.sawFinish = true, false, false
	m.streaming = nil
	m.entries = append(m.entries, &entry{kind: entryUser, text: text})
	m.refresh(true)
	t := Turn{SessionID: m.session, Text: text, Model: m.model, Confirmer: m.conf}
	m.turns.Add(1)
	go func() {
		defer m.turns.Done()
		defer cancel()
		res, err := m.b.Turn(ctx, t, func(e agent.Event) {
			m.post(context.Background(), eventMsg{id, e})
		})
		m.post(context.Background(), turnDoneMsg{id, res, err})
	}()
}

func (m *Model) onEvent(e agent.Event) {
	switch e.Type {
	case agent.EventDelta:
		if e.Content == "" {
			return
		}
		if m.streaming == nil {
			m.streaming = &entry{kind: entryAssistant}
			m.entries = append(m.entries, m.streaming)
		}
		m.streaming.text += e.Content
	case agent.EventToolStarted:
		m.finishStreaming()
		t := e.Tool
		m.entries = append(m.entries, &entry{kind: entryTool, tool: &toolBlock{
			id: t.ID, name: t.Name, args: t.Arguments, status: "running", started: m.now(),
		}})
	case agent.EventToolFinished:
		t := e.Tool
		b := m.toolBlock(t.ID)
		if b == nil {
			b = &toolBlock{id: t.ID, name: t.Name, args: t.Arguments}
			m.entries = append(m.entries, &entry{kind: entryTool, tool: b})
		}
		b.status, b.content = t.Status, t.Content
		b.duration = time.Duration(t.DurationMS) * time.Millisecond
	case agent.EventWarning:
		m.entries = append(m.entries, &entry{kind: entryNotice, title: "warning", text: e.Message})
	case agent.EventRunFinished:
		m.sawFinish = true
		r := e.Result
		if r == nil {
			break
		}
		if r.SessionID != "" {
			m.session = r.SessionID
		}
		switch r.Status {
		case memory.StatusFailed:
			m.finishStreaming()
			m.entries = append(m.entries, &entry{kind: entryError, text: "the turn failed: " + r.Error})
		case memory.StatusCancelled:
			m.finishStreaming()
			m.markRunningTools("cancelled")
			m.entries = append(m.entries, &entry{kind: entryNotice, title: "cancelled", text: "the turn was cancelled; what was said so far is kept"})
		default:
			if m.streaming == nil && r.Content != "" {
				m.streaming = &entry{kind: entryAssistant, text: r.Content}
				m.entries = append(m.entries, m.streaming)
			}
			m.finishStreaming()
		}
	default:
		return
	}
	m.refresh(false)
}

func (m *Model) onTurnDone(res *agent.Result, err error) {
	m.running, m.cancelling = false, false
	m.cancel = nil
	if m.pending != nil {
		m.pending.reply <- answerDeny
		m.pending = nil
	}
	if res != nil && res.SessionID != "" {
		m.session = res.SessionID
	}
	if !m.sawFinish {
		m.finishStreaming()
		m.markRunningTools("cancelled")
		switch {
		case errors.Is(err, context.Canceled):
			m.entries = append(m.entries, &entry{kind: entryNotice, title: "cancelled", text: "the turn was cancelled before it started"})
		case err != nil:
			m.entries = append(m.entries, &entry{kind: entryError, text: errs.MessageOrError(err)})
		}
	}
	m.refresh(false)
}

func (m *Model) finishStreaming() {
	if m.streaming != nil {
		m.streaming.final = true
		m.streaming = nil
	}
}

func (m *Model) markRunningTools(status string) {
	for _, e := range m.entries {
		if e.tool != nil && e.tool.status == "running" {
			e.tool.status = status
		}
	}
}

func (m *Model) anyToolRunning() bool {
	for _, e := range m.entries {
		if e.tool != nil && e.tool.status == "running" {
			return true
		}
	}
	return false
}

func (m *Model) toolBlock(id string) *toolBlock {
	for i := len(m.entries) - 1; i >= 0; i-- {
		if t := m.entries[i].tool; t != nil && t.id == id {
			return t
		}
	}
	return nil
}

func (m *Model) notice(title, text string) {
	m.entries = append(m.entries, &entry{kind: entryNotice, title: title, text: text})
	m.refresh(true)
}

func (m *Model) fail(err error) {
	m.entries = append(m.entries, &entry{kind: entryError, text: errs.MessageOrError(err)})
	m.refresh(true)
}

const helpText = `/new        start a new session
/sessions   resume a stored session (picker)
/model      pick the model for the next turns
/tools      list the tools this session may use
/memory     show the external memory (memory.md, user.md)
/policy     show the active policy revision
/cancel     cancel the running turn
/help       this help
/quit       leave (Ctrl-C when idle)
Keys: Enter sends · Ctrl-C cancels the turn, twice quits · Ctrl-O shows or
hides tool details · PgUp/PgDn/↑/↓ scroll · a confirmation takes y (allow
once), a (allow always in this session), n/Enter/Esc (deny, the default).`

// command runs a slash command.
func (m *Model) command(line string) (tea.Model, tea.Cmd) {
	name, _, _ := strings.Cut(line, " ")
	busy := func() bool {
		if m.running {
			m.status = name + " waits until the turn ends (or /cancel it)"
			return true
		}
		return false
	}
	switch name {
	case "/help", "/?":
		m.notice("help", helpText)
	case "/new":
		if busy() {
			break
		}
		id, err := m.b.Bind(m.ctx, "")
		if err != nil {
			m.fail(err)
			break
		}
		m.switchSession(id)
		m.notice("new session", id)
	case "/sessions", "/resume":
		if busy() {
			break
		}
		list, err := m.b.Sessions(m.ctx)
		if err != nil {
			m.fail(err)
			break
		}
		if len(list) == 0 {
			m.notice("sessions", "no stored session yet")
			break
		}
		m.picks = m.picks[:0]
		m.cursor = 0
		for i, s := range list {
			if s.ID == m.session {
				m.cursor = i
			}
			m.picks = append(m.picks, pickItem{id: s.ID, label: sessionLabel(s, s.ID == m.session)})
		}
		m.mode = modeSessions
	case "/model", "/models":
		m.picks = m.picks[:0]
		m.cursor = 0
		for i, name := range m.models {
			label := name
			if i == 0 {
				label += " (configured)"
			}
			if name == m.currentModel() {
				label += " *"
				m.cursor = i
			}
			m.picks = append(m.picks, pickItem{id: name, label: label})
		}
		m.mode = modeModels
	case "/tools":
		defs := m.b.Tools(m.ctx, m.session)
		var sb strings.Builder
		for _, d := range defs {
			desc, _, _ := strings.Cut(d.Description, "\n")
			fmt.Fprintf(&sb, "%s  [%s, %s]  %s\n", d.Name, d.SourceType, d.RiskLevel, desc)
		}
		if len(defs) == 0 {
			sb.WriteString("no tool is visible to this session")
		}
		m.notice(fmt.Sprintf("tools (%d visible to this session)", len(defs)), strings.TrimRight(sb.String(), "\n"))
	case "/memory":
		m.notice("memory", m.b.Memory(m.ctx))
	case "/policy":
		m.notice("policy", m.b.Policy())
	case "/cancel":
		if !m.running {
			m.status = "no turn is running"
			break
		}
		m.cancelTurn()
		m.status = "cancelling the turn"
	case "/quit", "/exit", "/q":
		return m, m.quitCmd()
	default:
		m.status = "unknown command " + name + "; /help lists them"
	}
	return m, nil
}

func (m *Model) currentModel() string {
	if m.model != "" {
		return m.model
	}
	if len(m.models) > 0 {
		return m.models[0]
	}
	return ""
}

func (m *Model) switchSession(id string) {
	m.session = id
	m.entries = nil
	m.streaming = nil
	m.conf.reset()
	m.refresh(true)
}

func (m *Model) onPickerKey(key string) (tea.Model, tea.Cmd) {
	switch key {
	case "up", "k", "shift+tab":
		if m.cursor > 0 {
			m.cursor--
		}
	case "down", "j", "tab":
		if m.cursor < len(m.picks)-1 {
			m.cursor++
		}
	case "pgup":
		m.cursor = max(0, m.cursor-m.bodyHeight()+1)
	case "pgdown":
		m.cursor = min(len(m.picks)-1, m.cursor+m.bodyHeight()-1)
	case "esc", "q":
		m.mode = modeChat
	case "enter":
		if m.cursor >= len(m.picks) { // an empty picker
			m.mode = modeChat
			break
		}
		picked := m.picks[m.cursor]
		mode := m.mode
		m.mode = modeChat
		if mode == modeModels {
			m.model = picked.id
			if len(m.models) > 0 && picked.id == m.models[0] {
				m.model = ""
			}
			m.status = "model for the next turns: " + picked.id
			return m, nil
		}
		m.resume(picked.id)
	}
	return m, nil
}

// resume binds the conversation to a stored session and shows its history.
func (m *Model) resume(id string) {
	id, err := m.b.Bind(m.ctx, id)
	if err != nil {
		m.fail(err)
		return
	}
	msgs, calls, err := m.b.History(m.ctx, id)
	m.switchSession(id)
	if err != nil {
		m.fail(err)
		return
	}
	m.LoadHistory(msgs, calls)
	m.notice("resumed", "session "+id)
}

// historyEntries turns stored messages into view entries; tool messages
// become tool blocks completed from their tool-call records.
func historyEntries(msgs []*store.Message, calls []*store.ToolCall) []*entry {
	byID := make(map[string]*store.ToolCall, len(calls))
	for _, c := range calls {
		byID[c.ID] = c
	}
	var out []*entry
	for _, msg := range msgs {
		switch msg.Role {
		case "user":
			if msg.Content != "" {
				out = append(out, &entry{kind: entryUser, text: msg.Content})
			}
		case "assistant":
			if msg.Content != "" {
				out = append(out, &entry{kind: entryAssistant, text: msg.Content, final: true})
			}
		case "tool":
			b := &toolBlock{id: msg.ToolCallID, name: msg.Name, status: "success", content: msg.Content}
			if c := byID[msg.ToolCallID]; c != nil {
				b.name, b.args, b.status = c.Name, c.Arguments, c.Status
				b.duration = time.Duration(c.DurationMS) * time.Millisecond
			}
			out = append(out, &entry{kind: entryTool, tool: b})
		}
	}
	return out
}

func sessionLabel(s *store.Session, current bool) string {
	title := s.Title
	if title == "" {
		title = "(untitled)"
	}
	mark := "  "
	if current {
		mark = "* "
	}
	return fmt.Sprintf("%s%s · %s · %s · %s", mark, title, s.Source, s.UpdatedAt.Local().Format("01-02 15:04"), shortID(s.ID))
}

func shortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}
