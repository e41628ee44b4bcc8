package knowledge

import (
	"path"
	"strings"
	"unicode"

	"github.com/nagent/nagent/store"
)

// SplitDocument cuts a document into chunks of at most size characters,
// consecutive chunks of one section sharing about overlap characters.
// Markdown headings start new sections, so a chunk never spans two; each
// chunk's title is the document's title and its section's heading. The
// document's title is its first level-one heading, else its file name.
func SplitDocument(name, text string, size, overlap int) (title string, chunks []store.KnowledgeChunk) {
	text = strings.ReplaceAll(text, "\r\n", "\n")
	title = strings.TrimSuffix(path.Base(name), path.Ext(name))
	type section struct {
		heading string
		body    strings.Builder
	}
	var sections []*section
	cur := &section{}
	sections = append(sections, cur)
	inFence := false
	for _, line := range strings.SplitAfter(text, "\n") {
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~") {
			inFence = !inFence
		}
		if h, ok := heading(trimmed); ok && !inFence {
			if strings.HasPrefix(trimmed, "# ") && title == strings.TrimSuffix(path.Base(name), path.Ext(name)) {
				title = h
			}
			cur = &section{heading: h}
			sections = append(sections, cur)
		}
		cur.body.WriteString(line)
	}
	for _, s := range sections {
		body := strings.TrimSpace(s.body.String())
		if body == "" || body == strings.TrimSpace(strings.TrimLeft(s.heading, "#")) {
			continue
		}
		if _, only := heading(body); only && !strings.Contains(body, "\n") {
			continue // a heading with nothing under it
		}
		t := title
		if s.heading != "" && s.heading != title {
			t = title + " › " + s.heading
		}
		for _, piece := range window(body, size, overlap) {
			chunks = append(chunks, store.KnowledgeChunk{Path: name, Seq: len(chunks), Title: t, Content: piece})
		}
	}
	return title, chunks
}

// heading returns the text of a Markdown ATX heading line.
func heading(line string) (string, bool) {
	n := 0
	for n < len(line) && line[n] == '#' {
		n++
	}
	if n == 0 || n > 6 || n >= len(line) || line[n] != ' ' {
		return "", false
	}
	return strings.TrimSpace(strings.TrimRight(line[n:], "# ")), true
}

// window cuts text into pieces of at most size runes that overlap by about
// overlap runes, preferring to cut at a paragraph, line or word boundary.
func window(text string, size, overlap int) []string {
	r := []rune(text)
	if len(r) <= size {
		return []string{text}
	}
	var out []string
	start := 0
	for start < len(r) {
		end := min(start+size, len(r))
		if end < len(r) {
			end = cut(r, start+size/2, end)
		}
		out = append(out, strings.TrimSpace(string(r[start:end])))
		if end == len(r) {
			break
		}
		next := end - overlap
		// Start the overlap at a word boundary.
		for next < end && next > start && !unicode.IsSpace(r[next-1]) {
			next++
		}
		if next <= start || next >= end {
			next = end
		}
		start = next
	}
	return out
}

// cut returns the best place in (lo, hi] to end a piece: after a blank
// line, else after a line break, else after a space, else hi.
func cut(r []rune, lo, hi int) int {
	for _, sep := range []string{"\n\n", "\n", ". ", " "} {
		s := []rune(sep)
		for i := hi - len(s); i > lo; i-- {
			if string(r[i:i+len(s)]) == sep {
				return i + len(s)
			}
		}
	}
	return hi
}
