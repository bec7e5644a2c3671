package tools

import "time"

// Limits shared by every backend. They are part of the tool contract: a
// caller may rely on them when it swaps one backend for another.
const (
	// WorkspaceName is the logical path of the workspace root as the tools
	// report it and as models see it.
	WorkspaceName = "/workspace"

	// MaxPathSegments is the deepest path a tool accepts.
	MaxPathSegments = 16
	// MaxSegmentChars is the longest single path segment a tool accepts.
	MaxSegmentChars = 80

	// MaxCommandBytes bounds the total size of a shell_execute argv.
	MaxCommandBytes = 4096
	// MaxStdinChars bounds shell_execute stdin, in characters.
	MaxStdinChars = 48000
	// MaxEnvBytes bounds the total size of shell_execute env overrides.
	MaxEnvBytes = 32 * 1024
	// DefaultShellTimeout is the shell_execute timeout when none is given.
	DefaultShellTimeout = 30 * time.Second
	// MinShellTimeout and MaxShellTimeout clamp a requested timeout.
	MinShellTimeout = 1 * time.Second
	// MaxShellTimeout is the longest shell_execute timeout.
	MaxShellTimeout = 120 * time.Second
	// KillGrace is how long a process group has between SIGTERM and SIGKILL.
	KillGrace = 2 * time.Second
	// MaxOutputBytes caps shell_execute stdout and stderr, each.
	MaxOutputBytes = 32 * 1024
	// TruncatedMarker is appended to any output or listing that was cut.
	TruncatedMarker = "[truncated]"
	// CaptureDisabled is returned as stdout and stderr when capture_output is false.
	CaptureDisabled = "capture disabled"
	// TimeoutExitCode is the exit code reported for a command that timed out.
	TimeoutExitCode = 124
	// MaxChangedFiles bounds the changed_files list of one shell_execute.
	MaxChangedFiles = 2000
	// MaxSnapshotEntries bounds the workspace entries compared to compute
	// changed_files; a larger tree gives a partial (flagged) report.
	MaxSnapshotEntries = 20000

	// MaxWriteChars bounds write_file content and edit_file strings.
	MaxWriteChars = 48000
	// MaxEditFileBytes bounds the size of a file edit_file will rewrite.
	MaxEditFileBytes = 1 << 20
	// MaxListEntries truncates ls, glob and grep results.
	MaxListEntries = 2000
	// MaxWalkEntries bounds how many entries glob and grep visit.
	MaxWalkEntries = 100000
	// DefaultReadLines is read_file's page size when no limit is given; it
	// is also the largest limit accepted.
	DefaultReadLines = 2000
	// MaxReadBytes bounds the text one read_file call returns.
	MaxReadBytes = 256 * 1024
	// MaxLineChars truncates a single line in read_file and grep output.
	MaxLineChars = 2000
	// MaxGrepLineChars truncates the text of a grep match.
	MaxGrepLineChars = 500
	// MaxGrepFileBytes is the largest file grep searches; bigger ones are skipped.
	MaxGrepFileBytes = 8 << 20
	// MaxPatternChars bounds glob and grep patterns.
	MaxPatternChars = 1000
	// BinarySniffBytes is how much of a file is inspected to decide it is binary.
	BinarySniffBytes = 8192

	// MaxCodeChars bounds evaluate_python code.
	MaxCodeChars = 2000
	// PythonTimeout is evaluate_python's fixed timeout.
	PythonTimeout = 5 * time.Second
	// MaxPythonOutputChars caps evaluate_python stdout and stderr, each.
	MaxPythonOutputChars = 4096
	// MaxEvalFiles bounds the reads and the writes of one evaluate_python call.
	MaxEvalFiles = 16

	// MaxPodmanCommandBytes bounds a podman_shell command string.
	MaxPodmanCommandBytes = 4096
)
