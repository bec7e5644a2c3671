package tools

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"
	"unicode/utf8"
)

// ShellParams are the parameters of shell_execute.
type ShellParams struct {
	// Command is the argv to run; never a shell string. Required.
	Command []string `json:"command"`
	// Cwd is the working directory relative to /workspace (default the root).
	Cwd string `json:"cwd,omitempty"`
	// Env holds ASCII environment overrides applied on top of the base environment.
	Env map[string]string `json:"env,omitempty"`
	// Stdin is written to the command's standard input.
	Stdin string `json:"stdin,omitempty"`
	// TimeoutSeconds defaults to 30 and is clamped to [1, 120].
	TimeoutSeconds *float64 `json:"timeout_seconds,omitempty"`
	// CaptureOutput defaults to true; false discards the output.
	CaptureOutput *bool `json:"capture_output,omitempty"`
}

// ShellResult is the result of shell_execute. A command that fails is a
// normal result with its exit code.
type ShellResult struct {
	// Command echoes the argv that ran.
	Command []string `json:"command"`
	// Cwd is the logical working directory ("/workspace/...").
	Cwd string `json:"cwd"`
	// ExitCode is the command's exit status: 124 on timeout, 128+N when
	// killed by signal N, 127 when the program was not found, 126 when it
	// could not be executed.
	ExitCode int `json:"exit_code"`
	// Stdout and Stderr hold at most MaxOutputBytes each, ending in
	// TruncatedMarker when cut, or CaptureDisabled.
	Stdout string `json:"stdout"`
	Stderr string `json:"stderr"`
	// DurationMS is the wall time of the command in milliseconds.
	DurationMS int64 `json:"duration_ms"`
	// TimedOut is true when the timeout killed the command.
	TimedOut bool `json:"timed_out"`
	// ChangedFiles lists (at most MaxChangedFiles) entries under /workspace
	// created, modified or removed while the command ran. Commands running
	// at the same time in the same workspace see each other's changes.
	ChangedFiles []FileChange `json:"changed_files"`
	// ChangedFilesTruncated is true when ChangedFiles is incomplete: the
	// list was cut, the workspace held more than MaxSnapshotEntries entries,
	// or the kernel dropped change events (too many at once).
	ChangedFilesTruncated bool `json:"changed_files_truncated,omitempty"`
}

// FileChange is one entry of ShellResult.ChangedFiles.
type FileChange struct {
	// Path is relative to /workspace.
	Path string `json:"path"`
	// Change is "created", "modified" or "removed".
	Change string `json:"change"`
}

// File change kinds reported in FileChange.Change.
const (
	ChangeCreated  = "created"
	ChangeModified = "modified"
	ChangeRemoved  = "removed"
)

// shellCall is a validated ShellParams.
type shellCall struct {
	argv    []string
	cwd     string
	env     []string
	stdin   string
	timeout time.Duration
	capture bool
}

const shellTool = "shell_execute"

// Validate checks p against the shell_execute contract without running it.
func (p ShellParams) Validate() error {
	_, err := p.check()
	return err
}

func (p ShellParams) check() (shellCall, error) {
	var c shellCall
	if len(p.Command) == 0 || p.Command[0] == "" {
		return c, invalid(shellTool, "command", "is empty; give an argv such as [\"ls\", \"-la\"] (no shell string)")
	}
	total := 0
	for i, a := range p.Command {
		total += len(a)
		for j := 0; j < len(a); j++ {
			if a[j] == 0 {
				return c, invalid(shellTool, "command", fmt.Sprintf("argument %d contains a NUL byte; remove it", i))
			}
		}
	}
	if total > MaxCommandBytes {
		return c, invalid(shellTool, "command", fmt.Sprintf("is %d bytes in total; keep it at most %d (put long input in stdin or a file)", total, MaxCommandBytes))
	}
	cwd, err := CleanPath(shellTool, "cwd", p.Cwd, true)
	if err != nil {
		return c, err
	}
	envBytes := 0
	env := make([]string, 0, len(p.Env))
	for k, v := range p.Env {
		envBytes += len(k) + len(v) + 1
		if k == "" {
			return c, invalid(shellTool, "env", "has an empty key; remove it")
		}
		if !isPrintableASCII(k) || strings.IndexByte(k, '=') >= 0 {
			return c, invalid(shellTool, "env", fmt.Sprintf("key %q must be printable ASCII without '='", k))
		}
		if !isASCIIText(v) {
			return c, invalid(shellTool, "env", fmt.Sprintf("value of %q must be ASCII without NUL; transliterate or pass it in stdin", k))
		}
		env = append(env, k+"="+v)
	}
	if envBytes > MaxEnvBytes {
		return c, invalid(shellTool, "env", fmt.Sprintf("is %d bytes in total; keep it at most %d", envBytes, MaxEnvBytes))
	}
	if n := utf8.RuneCountInString(p.Stdin); n > MaxStdinChars {
		return c, invalid(shellTool, "stdin", fmt.Sprintf("is %d characters; keep it at most %d (write larger input to a file first)", n, MaxStdinChars))
	}
	timeout := DefaultShellTimeout
	if p.TimeoutSeconds != nil {
		s := *p.TimeoutSeconds
		if math.IsNaN(s) || math.IsInf(s, 0) {
			return c, invalid(shellTool, "timeout_seconds", "must be a finite number of seconds between 1 and 120")
		}
		s = min(max(s, MinShellTimeout.Seconds()), MaxShellTimeout.Seconds())
		timeout = time.Duration(s * float64(time.Second))
	}
	capture := p.CaptureOutput == nil || *p.CaptureOutput
	return shellCall{argv: p.Command, cwd: cwd, env: env, stdin: p.Stdin, timeout: timeout, capture: capture}, nil
}

// ShellExecute runs an argv inside the workspace.
func (w *Workspace) ShellExecute(ctx context.Context, p ShellParams) (ShellResult, error) {
	c, err := p.check()
	if err != nil {
		return ShellResult{}, err
	}
	if c.cwd != "." {
		st, err := w.root.Stat(c.cwd)
		if err != nil {
			return ShellResult{}, w.fsError(shellTool, "cwd", c.cwd, err)
		}
		if !st.IsDir() {
			return ShellResult{}, invalid(shellTool, "cwd", fmt.Sprintf("%s is not a directory; name a directory inside %s", c.cwd, WorkspaceName))
		}
	}
	window := w.beginChanges()
	out, err := w.run(ctx, runSpec{
		argv:    c.argv,
		dir:     w.hostPath(c.cwd),
		env:     mergeEnv(w.env, c.env),
		stdin:   c.stdin,
		timeout: c.timeout,
		capture: c.capture,
		limit:   MaxOutputBytes,
	})
	if err != nil {
		w.abandonChanges(window)
		return ShellResult{}, err
	}
	changes, partial := w.endChanges(window, MaxChangedFiles)
	res := ShellResult{
		Command:               append([]string(nil), c.argv...),
		Cwd:                   logical(c.cwd),
		ExitCode:              out.exitCode,
		Stdout:                out.stdout,
		Stderr:                out.stderr,
		DurationMS:            out.duration.Milliseconds(),
		TimedOut:              out.timedOut,
		ChangedFiles:          changes,
		ChangedFilesTruncated: partial,
	}
	if !c.capture {
		res.Stdout, res.Stderr = CaptureDisabled, CaptureDisabled
	}
	return res, nil
}

func isPrintableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x21 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

func isASCIIText(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == 0 || s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// mergeEnv applies overrides ("K=V") on top of base.
func mergeEnv(base, overrides []string) []string {
	if len(overrides) == 0 {
		return base
	}
	keys := make(map[string]bool, len(overrides))
	for _, kv := range overrides {
		keys[envKey(kv)] = true
	}
	out := make([]string, 0, len(base)+len(overrides))
	for _, kv := range base {
		if !keys[envKey(kv)] {
			out = append(out, kv)
		}
	}
	return append(out, overrides...)
}

func envKey(kv string) string {
	for i := 0; i < len(kv); i++ {
		if kv[i] == '=' {
			return kv[:i]
		}
	}
	return kv
}
