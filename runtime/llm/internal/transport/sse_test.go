package transport_test

import (
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/nagent/nagent/runtime/llm/internal/transport"
)

// event is one event as Reader.Next returns it.
type event struct {
	Name string
	Data string
}

var readerTests = []struct {
	name string
	in   string
	want []event
}{
	{"Empty", "", nil},
	{"BlankLinesOnly", "\n\n\r\n", nil},
	{"OneEvent", "data: {\"a\":1}\n\n", []event{{"", `{"a":1}`}}},
	{"NamedEvents", "event: message_start\ndata: 1\n\nevent: ping\ndata: 2\n\n", []event{{"message_start", "1"}, {"ping", "2"}}},
	{"MultilineData", "data: first\ndata: second\n\n", []event{{"", "first\nsecond"}}},
	{"CRLF", "event: e\r\ndata: 1\r\n\r\ndata: 2\r\n\r\n", []event{{"e", "1"}, {"", "2"}}},
	{"Comments", ": OPENROUTER PROCESSING\n\ndata: 1\n: inside\n\n", []event{{"", "1"}}},
	{"UnknownFieldsSkipped", "id: 7\nretry: 100\ndata: 1\n\n", []event{{"", "1"}}},
	{"NoSpaceAfterColon", "event:e\ndata:1\n\n", []event{{"e", "1"}}},
	{"OneSpaceStripped", "data:  indented\n\n", []event{{"", " indented"}}},
	{"FieldWithoutColon", "data\n\n", []event{{"", ""}}},
	{"NameWithoutDataDropped", "event: lonely\n\ndata: 1\n\n", []event{{"", "1"}}},
	{"LastEventWithoutBlankLine", "data: 1\n\ndata: 2\n", []event{{"", "1"}, {"", "2"}}},
	{"LastEventWithoutNewline", "event: e\ndata: 2", []event{{"e", "2"}}},
	{"LongLine", "data: " + strings.Repeat("x", 100<<10) + "\n\n", []event{{"", strings.Repeat("x", 100<<10)}}},
}

func TestReader(t *testing.T) {
	for _, tt := range readerTests {
		t.Run(tt.name, func(t *testing.T) {
			r := transport.NewReader(strings.NewReader(tt.in))
			var got []event
			for {
				name, data, err := r.Next()
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatalf("Next: %v", err)
				}
				got = append(got, event{name, string(data)})
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("events = %q, want %q", got, tt.want)
			}
			if _, _, err := r.Next(); err != io.EOF {
				t.Errorf("Next after the end = %v, want io.EOF", err)
			}
		})
	}
}

func TestReaderError(t *testing.T) {
	errBroken := errors.New("connection reset")
	r := transport.NewReader(io.MultiReader(strings.NewReader("data: 1\n\ndata: 2"), iotest.ErrReader(errBroken)))
	if _, data, err := r.Next(); err != nil || string(data) != "1" {
		t.Fatalf("first Next = %q, %v; want \"1\"", data, err)
	}
	if _, _, err := r.Next(); !errors.Is(err, errBroken) {
		t.Fatalf("second Next: err = %v, want %v", err, errBroken)
	}
}
