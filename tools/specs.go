package tools

import (
	"encoding/json"
	"strconv"
)

// Spec describes one tool to a host or a model: its name, what it does and
// the JSON schema of its parameters.
type Spec struct {
	// Name is the tool name used in calls.
	Name string `json:"name"`
	// Description tells a model when and how to use the tool.
	Description string `json:"description"`
	// InputSchema is a JSON Schema (type "object") for the parameters.
	InputSchema json.RawMessage `json:"input_schema"`
	// ReadOnly is true for tools that never change the workspace.
	ReadOnly bool `json:"read_only"`
	// Destructive is true for tools that may remove or overwrite data.
	Destructive bool `json:"destructive"`
}

// Tool names.
const (
	ShellExecuteTool   = shellTool
	LsTool             = lsTool
	ReadFileTool       = readTool
	WriteFileTool      = writeTool
	EditFileTool       = editTool
	GlobTool           = globTool
	GrepTool           = grepTool
	RmTool             = rmTool
	EvaluatePythonTool = evalTool
)

func itoa(v int) string { return strconv.Itoa(v) }

// pathSchema is the schema fragment shared by every path parameter.
func pathSchema(desc string) string {
	return `{"type":"string","maxLength":` + itoa(MaxPathSegments*(MaxSegmentChars+1)+len(WorkspaceName)) +
		`,"description":` + strconv.Quote(desc+" Relative to /workspace; ASCII, at most "+itoa(MaxPathSegments)+" segments of at most "+itoa(MaxSegmentChars)+" characters; no \"..\".") + `}`
}

// IsTool reports whether name is one of the tools of Specs (podman_shell
// is not), without building the specs.
func IsTool(name string) bool {
	switch name {
	case ShellExecuteTool, LsTool, ReadFileTool, WriteFileTool, EditFileTool,
		GlobTool, GrepTool, RmTool, EvaluatePythonTool:
		return true
	}
	return false
}

// Specs returns the tools every backend offers, in a stable order.
// podman_shell is not among them; see PodmanShellSpec.
func Specs() []Spec {
	return []Spec{
		{
			Name:        ShellExecuteTool,
			Description: "Run a short command in /workspace from an argv (no shell: use [\"sh\", \"-c\", \"...\"] only if you need pipes). A non-zero exit is a normal result. stdout and stderr are cut at " + itoa(MaxOutputBytes) + " bytes each; changed_files lists what the command changed.",
			InputSchema: json.RawMessage(`{"type":"object","additionalProperties":false,"required":["command"],"properties":{` +
				`"command":{"type":"array","minItems":1,"items":{"type":"string"},"description":"Program and arguments, at most ` + itoa(MaxCommandBytes) + ` bytes in total."},` +
				`"cwd":` + pathSchema("Working directory.") + `,` +
				`"env":{"type":"object","additionalProperties":{"type":"string"},"description":"Extra environment variables; ASCII keys and values."},` +
				`"stdin":{"type":"string","maxLength":` + itoa(MaxStdinChars) + `,"description":"Text for standard input."},` +
				`"timeout_seconds":{"type":"number","description":"Timeout in seconds (default ` + itoa(int(DefaultShellTimeout.Seconds())) + `, clamped to [1, ` + itoa(int(MaxShellTimeout.Seconds())) + `]). On timeout the command is killed and exit_code is 124."},` +
				`"capture_output":{"type":"boolean","description":"Return stdout and stderr (default true)."}}}`),
			Destructive: true,
		},
		{
			Name:        LsTool,
			Description: "List a directory in /workspace (name, type, size), sorted, at most " + itoa(MaxListEntries) + " entries.",
			InputSchema: json.RawMessage(`{"type":"object","additionalProperties":false,"properties":{"path":` + pathSchema("Directory to list (default the root).") + `}}`),
			ReadOnly:    true,
		},
		{
			Name:        ReadFileTool,
			Description: "Read lines of a text file in /workspace. offset is the 0-based first line, limit the number of lines (default and maximum " + itoa(DefaultReadLines) + "); total_lines tells how far to page. Binary files are refused.",
			InputSchema: json.RawMessage(`{"type":"object","additionalProperties":false,"required":["file_path"],"properties":{` +
				`"file_path":` + pathSchema("File to read.") + `,` +
				`"offset":{"type":"integer","minimum":0,"description":"0-based index of the first line."},` +
				`"limit":{"type":"integer","minimum":0,"description":"Number of lines, at most ` + itoa(DefaultReadLines) + `."}}}`),
			ReadOnly: true,
		},
		{
			Name:        WriteFileTool,
			Description: "Create a new text file in /workspace (parent directories are created). Refuses to overwrite: use edit_file to change a file. At most " + itoa(MaxWriteChars) + " characters.",
			InputSchema: json.RawMessage(`{"type":"object","additionalProperties":false,"required":["file_path","content"],"properties":{` +
				`"file_path":` + pathSchema("File to create.") + `,` +
				`"content":{"type":"string","maxLength":` + itoa(MaxWriteChars) + `,"description":"Text to write."}}}`),
		},
		{
			Name:        EditFileTool,
			Description: "Replace exact text in a text file in /workspace. old_string must occur exactly once (include surrounding lines to make it unique) unless replace_all is true.",
			InputSchema: json.RawMessage(`{"type":"object","additionalProperties":false,"required":["file_path","old_string","new_string"],"properties":{` +
				`"file_path":` + pathSchema("File to edit.") + `,` +
				`"old_string":{"type":"string","minLength":1,"maxLength":` + itoa(MaxWriteChars) + `,"description":"Exact text to replace, whitespace included."},` +
				`"new_string":{"type":"string","maxLength":` + itoa(MaxWriteChars) + `,"description":"Replacement text."},` +
				`"replace_all":{"type":"boolean","description":"Replace every occurrence (default false)."}}}`),
			Destructive: true,
		},
		{
			Name:        GlobTool,
			Description: "Find files in /workspace whose path (relative to path) matches a glob: * and ? within a segment, [a-z] classes, ** across directories. At most " + itoa(MaxListEntries) + " matches.",
			InputSchema: json.RawMessage(`{"type":"object","additionalProperties":false,"required":["pattern"],"properties":{` +
				`"pattern":{"type":"string","minLength":1,"maxLength":` + itoa(MaxPatternChars) + `,"description":"Glob such as \"**/*.py\"."},` +
				`"path":` + pathSchema("Directory to search (default the root).") + `}}`),
			ReadOnly: true,
		},
		{
			Name:        GrepTool,
			Description: "Search text files in /workspace for lines matching a regular expression (RE2 syntax). Returns path, line number and text, at most " + itoa(MaxListEntries) + " matches; binary files are skipped.",
			InputSchema: json.RawMessage(`{"type":"object","additionalProperties":false,"required":["pattern"],"properties":{` +
				`"pattern":{"type":"string","minLength":1,"maxLength":` + itoa(MaxPatternChars) + `,"description":"Regular expression."},` +
				`"path":` + pathSchema("File or directory to search (default the root).") + `,` +
				`"glob":{"type":"string","maxLength":` + itoa(MaxPatternChars) + `,"description":"Only search files matching this glob (base name, or relative path if it contains /)."}}}`),
			ReadOnly: true,
		},
		{
			Name:        RmTool,
			Description: "Remove a file, symlink or directory (with its contents) in /workspace.",
			InputSchema: json.RawMessage(`{"type":"object","additionalProperties":false,"required":["path"],"properties":{"path":` + pathSchema("Entry to remove.") + `}}`),
			Destructive: true,
		},
		{
			Name: EvaluatePythonTool,
			Description: "Run Python code (python3, at most " + itoa(MaxCodeChars) + " characters, " + itoa(int(PythonTimeout.Seconds())) + " s) in /workspace. Files listed in reads are available as reads[path] and read_text(path); " +
				"files listed in writes are produced with write_text(path, text) and applied to /workspace only if the code exits without error. Output is cut at " + itoa(MaxPythonOutputChars) + " characters.",
			InputSchema: json.RawMessage(`{"type":"object","additionalProperties":false,"required":["code"],"properties":{` +
				`"code":{"type":"string","minLength":1,"maxLength":` + itoa(MaxCodeChars) + `,"description":"Python source."},` +
				`"reads":{"type":"array","maxItems":` + itoa(MaxEvalFiles) + `,"items":` + pathSchema("File to pass to the code.") + `},` +
				`"writes":{"type":"array","maxItems":` + itoa(MaxEvalFiles) + `,"items":` + pathSchema("File the code may write.") + `}}}`),
			Destructive: true,
		},
	}
}

// PodmanShellSpec describes podman_shell, offered by the container backend only.
func PodmanShellSpec() Spec {
	return Spec{
		Name:        PodmanShellTool,
		Description: "Generic shell in the sandbox container: action \"start\" ensures it runs, \"exec\" runs command with /bin/sh -c in /workspace, \"stop\" removes it.",
		InputSchema: json.RawMessage(`{"type":"object","additionalProperties":false,"required":["action"],"properties":{` +
			`"action":{"type":"string","enum":["start","exec","stop"]},` +
			`"command":{"type":"string","maxLength":` + itoa(MaxPodmanCommandBytes) + `,"description":"Shell command, required for exec."},` +
			`"timeout_seconds":{"type":"number","description":"Timeout for exec in seconds (default 30, clamped to [1, 120])."}}}`),
		Destructive: true,
	}
}
