// Package errdefs defines podbot's error classes.
//
// Every error podbot's library returns belongs to one class: configuration,
// container engine, GitHub, filesystem, or a process exit status. Callers
// branch on the class with errors.Is against the class sentinels
// (ErrConfig, ErrContainer, ErrGitHub, ErrFilesystem) or on the finer reason
// sentinels (ErrSocketNotFound, ErrNotFound, ...), and read the context
// fields with errors.As. No caller ever needs to match message text.
//
// The CLI turns these classes into exit codes in exactly one place
// (cmd/podbot); library code never exits.
package errdefs
