package egress

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"
)

// Decisions as the log writes them.
const (
	DecisionAllow = "allow"
	DecisionDeny  = "deny"
)

// MaxLogLine bounds one line of the decision log that ReadLog accepts.
const MaxLogLine = 16 << 10

// LogEntry is one line of the decision log: one CONNECT tunnel or one
// forwarded plain-HTTP request. It never holds header values or bodies.
type LogEntry struct {
	// Time is when the connection or request ended (or was refused).
	Time time.Time `json:"time"`
	// Host and Port are the destination asked for, normalised.
	Host string `json:"host"`
	Port int    `json:"port"`
	// Method is CONNECT or the forwarded request's method.
	Method string `json:"method"`
	// Decision is "allow" or "deny".
	Decision string `json:"decision"`
	// Rule is the rule that decided, if any.
	Rule string `json:"rule,omitempty"`
	// Reason says why, and what went wrong after an allow.
	Reason string `json:"reason,omitempty"`
	// BytesUp counts bytes from the sandbox to the destination (request
	// body or tunnel bytes), BytesDown the other way.
	BytesUp   int64 `json:"bytes_up"`
	BytesDown int64 `json:"bytes_down"`
}

// ReadLog calls fn for every entry of a decision log, in order, skipping
// blank lines. A line longer than MaxLogLine or not a JSON entry is an
// error; an error from fn stops the read and is returned.
func ReadLog(r io.Reader, fn func(LogEntry) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), MaxLogLine)
	line := 0
	for sc.Scan() {
		line++
		b := sc.Bytes()
		if len(b) == 0 {
			continue
		}
		var e LogEntry
		if err := json.Unmarshal(b, &e); err != nil {
			return fmt.Errorf("egress log line %d: %w", line, err)
		}
		if err := fn(e); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return fmt.Errorf("egress log line %d: longer than %d bytes", line+1, MaxLogLine)
		}
		return err
	}
	return nil
}

// decisionLog writes entries to one writer, a whole line per Write.
type decisionLog struct {
	mu     sync.Mutex
	w      io.Writer
	logger *slog.Logger
	failed bool
}

func (l *decisionLog) write(e LogEntry) {
	if l.w == nil {
		return
	}
	if len(e.Reason) > 1024 {
		e.Reason = e.Reason[:1024] + "..."
	}
	b, err := json.Marshal(e)
	if err != nil {
		return
	}
	b = append(b, '\n')
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, err := l.w.Write(b); err != nil && !l.failed {
		l.failed = true // say it once, not for every connection
		l.logger.Error("egress decision log write failed", "err", err)
	} else if err == nil {
		l.failed = false
	}
}
