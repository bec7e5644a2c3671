package hostflow

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
)

func TestLineLogger(t *testing.T) {
	long := strings.Repeat("x", maxStderrLine+10)
	tests := []struct {
		name   string
		writes []string
		want   []string
	}{
		{"one line", []string{"hello\n"}, []string{"hello"}},
		{"split across writes", []string{"he", "llo\nwor", "ld\n"}, []string{"hello", "world"}},
		{"crlf", []string{"a\r\nb\r\n"}, []string{"a", "b"}},
		{"no final newline", []string{"tail"}, []string{"tail"}},
		{"blank line", []string{"\n"}, []string{""}},
		{"over-long line in pieces", []string{long + "\n"}, []string{long[:maxStderrLine], long[maxStderrLine:]}},
		{"over-long without newline", []string{long}, []string{long[:maxStderrLine], long[maxStderrLine:]}},
		{"invalid utf-8", []string{"a\xffb\n"}, []string{"a\uFFFDb"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			l := newLineLogger(context.Background(), slog.New(slog.NewJSONHandler(&buf, nil)), "agent")
			for _, w := range tc.writes {
				if n, err := l.Write([]byte(w)); n != len(w) || err != nil {
					t.Fatalf("Write = %d, %v", n, err)
				}
			}
			l.flush()
			var got []string
			dec := json.NewDecoder(&buf)
			for dec.More() {
				var rec struct{ Line, Server string }
				if err := dec.Decode(&rec); err != nil {
					t.Fatal(err)
				}
				got = append(got, rec.Line)
			}
			if strings.Join(got, "|") != strings.Join(tc.want, "|") || len(got) != len(tc.want) {
				t.Errorf("logged %q, want %q", got, tc.want)
			}
		})
	}
}
