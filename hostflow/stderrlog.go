package hostflow

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
)

// maxStderrLine bounds one logged stderr line; longer lines are logged in
// pieces of this size.
const maxStderrLine = 8 << 10

// lineLogger turns the server's stderr into log records, one per line, so
// that it follows podbot's log level and format. It holds at most one
// partial line.
type lineLogger struct {
	ctx    context.Context
	logger *slog.Logger
	server string

	mu  sync.Mutex
	buf []byte
}

func newLineLogger(ctx context.Context, logger *slog.Logger, server string) *lineLogger {
	return &lineLogger{ctx: ctx, logger: logger, server: server}
}

// Write logs every complete line of p and keeps the rest.
func (l *lineLogger) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			room := maxStderrLine - len(l.buf)
			if len(p) < room {
				l.buf = append(l.buf, p...)
				return n, nil
			}
			l.buf = append(l.buf, p[:room]...)
			p = p[room:]
			l.emit()
			continue
		}
		line := p[:i]
		p = p[i+1:]
		for len(l.buf)+len(line) > maxStderrLine {
			room := maxStderrLine - len(l.buf)
			l.buf = append(l.buf, line[:room]...)
			line = line[room:]
			l.emit()
		}
		l.buf = append(l.buf, line...)
		l.emit()
	}
	return n, nil
}

// flush logs a final line that had no newline.
func (l *lineLogger) flush() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.buf) > 0 {
		l.emit()
	}
}

func (l *lineLogger) emit() {
	line := strings.TrimSuffix(string(l.buf), "\r")
	l.buf = l.buf[:0]
	l.logger.InfoContext(l.ctx, "agent stderr", "server", l.server, "line", strings.ToValidUTF8(line, "\uFFFD"))
}
