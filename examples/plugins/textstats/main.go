// Command textstats is an N-Agent plugin written in standard Go. Build it
// for WASI preview 1:
//
//	GOOS=wasip1 GOARCH=wasm go build -o textstats.wasm .
//
// It reads one JSON request on stdin and writes one JSON result on stdout
// (see wasm/README.md). Its one tool, word_count, counts the words, lines
// and characters of a text.
package main

import (
	"encoding/json"
	"io"
	"os"
	"strings"
	"unicode/utf8"
)

type request struct {
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments"`
}

type stats struct {
	Words int `json:"words"`
	Lines int `json:"lines"`
	Chars int `json:"chars"`
}

func main() {
	out := json.NewEncoder(os.Stdout)
	in, err := io.ReadAll(os.Stdin)
	if err != nil {
		out.Encode(map[string]string{"error": "read request: " + err.Error()})
		return
	}
	var req request
	if err := json.Unmarshal(in, &req); err != nil {
		out.Encode(map[string]string{"error": "request is not JSON: " + err.Error()})
		return
	}
	switch req.Tool {
	case "word_count":
		var args struct {
			Text string `json:"text"`
		}
		if err := json.Unmarshal(req.Arguments, &args); err != nil {
			out.Encode(map[string]string{"error": "word_count: arguments: " + err.Error()})
			return
		}
		out.Encode(map[string]any{"content": count(args.Text)})
	default:
		out.Encode(map[string]string{"error": "unknown tool " + req.Tool})
	}
}

// count counts words (runs of non-space), lines (a last line without a
// newline counts) and characters (Unicode code points).
func count(text string) stats {
	s := stats{Words: len(strings.Fields(text)), Chars: utf8.RuneCountInString(text)}
	s.Lines = strings.Count(text, "\n")
	if text != "" && !strings.HasSuffix(text, "\n") {
		s.Lines++
	}
	return s
}
