package transport

import (
	"bufio"
	"bytes"
	"io"
	"strings"
)

// Reader reads server-sent events: data lines are joined per event,
// comments and unknown fields are skipped.
type Reader struct {
	r *bufio.Reader
}

// NewReader returns a Reader of the event stream r.
func NewReader(r io.Reader) *Reader { return &Reader{r: bufio.NewReaderSize(r, 32<<10)} }

// Next returns the event name and data of the next event, or io.EOF after
// the last one. A stream that ends without a blank line still yields its
// last event. Lines may end in "\n" or "\r\n".
func (s *Reader) Next() (event string, data []byte, err error) {
	var buf bytes.Buffer
	hasData := false
	for {
		line, rerr := s.r.ReadString('\n')
		if rerr != nil && rerr != io.EOF {
			return "", nil, rerr
		}
		if rerr == io.EOF && line == "" {
			if hasData {
				return event, buf.Bytes(), nil
			}
			return "", nil, io.EOF
		}
		line = strings.TrimRight(line, "\r\n")
		switch {
		case line == "":
			if hasData {
				return event, buf.Bytes(), nil
			}
			event = ""
		case line[0] == ':':
			// comment, e.g. ": OPENROUTER PROCESSING"
		default:
			field, value, _ := strings.Cut(line, ":")
			value = strings.TrimPrefix(value, " ")
			switch field {
			case "data":
				if hasData {
					buf.WriteByte('\n')
				}
				buf.WriteString(value)
				hasData = true
			case "event":
				event = value
			}
		}
		if rerr == io.EOF {
			if hasData {
				return event, buf.Bytes(), nil
			}
			return "", nil, io.EOF
		}
	}
}
