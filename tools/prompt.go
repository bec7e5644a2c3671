package tools

// Prompt returns the text a host gives a model to explain the tools served
// from a sandbox container.
func Prompt() string {
	return `Sandbox workspace
-----------------
You are working in an isolated Linux container. /workspace is the only place you can write, and it
is where every tool operates: give paths relative to /workspace. Use ls, glob and grep to explore,
read_file to read (paged by lines), write_file to create a file, edit_file to change one, and rm to
delete. shell_execute runs a program from an argv list (no shell unless you call one) for at most
120 seconds; evaluate_python runs a short Python snippet for at most 5 seconds. The container has no
network and no privileges. Do not rely on anything outside /workspace.`
}

// UnsafePrompt returns the text for the unsafe local backend, where the
// same tools run on a host directory without isolation.
func UnsafePrompt() string {
	return `Local workspace (unsafe: no isolation)
--------------------------------------
Your tools operate on a temporary directory on the host, shown to you as /workspace: give paths
relative to it. Use ls, glob and grep to explore, read_file to read (paged by lines), write_file to
create a file, edit_file to change one, and rm to delete. shell_execute runs a program from an argv
list, without a shell, for at most 120 seconds; evaluate_python runs a short Python snippet for at
most 5 seconds. Nothing is isolated: commands run as the host user and may reach the network. Work
only inside /workspace.`
}
