package tools

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/podbot/podbot/errdefs"
)

// ReadFileParams are the parameters of read_file.
type ReadFileParams struct {
	// FilePath is the file to read, relative to /workspace.
	FilePath string `json:"file_path"`
	// Offset is the 0-based index of the first line to return.
	Offset int `json:"offset,omitempty"`
	// Limit is how many lines to return (default and maximum DefaultReadLines).
	Limit int `json:"limit,omitempty"`
}

// ReadFileResult is the result of read_file.
type ReadFileResult struct {
	// FilePath is the logical path read.
	FilePath string `json:"file_path"`
	// Content holds the requested lines joined by "\n".
	Content string `json:"content"`
	// Offset and Limit are the page actually returned.
	Offset int `json:"offset"`
	Limit  int `json:"limit"`
	// TotalLines is the number of lines in the file.
	TotalLines int `json:"total_lines"`
	// Truncated is true when a line was cut at MaxLineChars or the page
	// was cut at MaxReadBytes; ask for a smaller page to see the rest.
	Truncated bool `json:"truncated"`
}

const readTool = "read_file"

type readCall struct {
	rel           string
	offset, limit int
}

// Validate checks p against the read_file contract.
func (p ReadFileParams) Validate() error {
	_, err := p.check()
	return err
}

func (p ReadFileParams) check() (readCall, error) {
	rel, err := CleanPath(readTool, "file_path", p.FilePath, false)
	if err != nil {
		return readCall{}, err
	}
	if p.Offset < 0 {
		return readCall{}, invalid(readTool, "offset", fmt.Sprintf("is %d; give a line index of 0 or more", p.Offset))
	}
	if p.Limit < 0 {
		return readCall{}, invalid(readTool, "limit", fmt.Sprintf("is %d; give a line count between 1 and %d, or omit it", p.Limit, DefaultReadLines))
	}
	limit := p.Limit
	if limit == 0 || limit > DefaultReadLines {
		limit = DefaultReadLines
	}
	return readCall{rel: rel, offset: p.Offset, limit: limit}, nil
}

// ReadFile returns a page of lines from a text file in the workspace.
func (w *Workspace) ReadFile(ctx context.Context, p ReadFileParams) (ReadFileResult, error) {
	c, err := p.check()
	if err != nil {
		return ReadFileResult{}, err
	}
	f, size, err := w.openText(ctx, readTool, "file_path", c.rel)
	if err != nil {
		return ReadFileResult{}, err
	}
	defer f.Close()

	res := ReadFileResult{FilePath: logical(c.rel), Offset: c.offset, Limit: c.limit}
	br := bufio.NewReaderSize(f, sizedBuffer(size, readBufferBytes))
	var content strings.Builder
	var buf []byte
	n := 0
	for ; n < c.offset+c.limit; n++ {
		if n&1023 == 0 && ctx.Err() != nil {
			return ReadFileResult{}, ctx.Err()
		}
		line, cut, err := readLine(br, MaxLineChars, buf)
		if err == io.EOF {
			break
		}
		if err != nil {
			return ReadFileResult{}, w.fsError(readTool, "file_path", c.rel, err)
		}
		buf = line[:0]
		if n < c.offset {
			continue
		}
		if bytes.IndexByte(line, 0) >= 0 {
			return ReadFileResult{}, binaryRefused(readTool, "file_path", c.rel)
		}
		if content.Len()+len(line)+1 > MaxReadBytes {
			res.Truncated = true
			n++
			break
		}
		if n > c.offset {
			content.WriteByte('\n')
		}
		content.Write(line)
		if cut {
			content.WriteString(" " + TruncatedMarker)
			res.Truncated = true
		}
	}
	// Count the remaining lines without keeping them.
	rest, err := countLines(br, sizedBuffer(size, readBufferBytes))
	if err != nil {
		return ReadFileResult{}, w.fsError(readTool, "file_path", c.rel, err)
	}
	res.TotalLines = n + rest
	res.Content = strings.ToValidUTF8(content.String(), "\uFFFD")
	return res, nil
}

// readBufferBytes is the largest buffer read_file reads a file through.
const readBufferBytes = 64 * 1024

// countLines counts the lines left in r (a last line without a newline
// counts), reading through a buffer of bufSize bytes.
func countLines(r io.Reader, bufSize int) (int, error) {
	buf := make([]byte, bufSize)
	count, last := 0, byte('\n')
	for {
		n, err := r.Read(buf)
		if n > 0 {
			count += bytes.Count(buf[:n], []byte{'\n'})
			last = buf[n-1]
		}
		if err == io.EOF {
			if last != '\n' {
				count++
			}
			return count, nil
		}
		if err != nil {
			return count, err
		}
	}
}

func binaryRefused(tool, param, rel string) error {
	return &ToolError{Tool: tool, Param: param, Reason: errdefs.ErrUnsupported,
		Msg: fmt.Sprintf("%s is a binary file; only text files can be used (inspect it with shell_execute, e.g. [\"xxd\", \"-l\", \"256\", %q])", rel, rel)}
}
