// Package hostflow hosts a protocol server that runs in a sandbox: it starts
// the server command as a protocol-mode exec (no TTY, stdout demultiplexed
// from stderr) and bridges the caller's stdin and stdout to it through the
// acp policy.
//
// The caller's stdout carries the server's protocol bytes and nothing else:
// hostflow never writes to it itself, and the server's stderr goes to a
// separate writer or, by default, to the logger one line per record. Buffers
// are bounded in both directions (the client's frames wait in a 64 KiB
// batching pipe, the server's output goes through a synchronous pipe, and the
// acp bridge holds at most one frame per direction), so a slow reader on
// either side slows the writer on the other.
//
// When the caller's stdin ends, the server's stdin is half-closed and Serve
// waits for the server to exit; when the server exits, Serve returns its exit
// status. Cancelling the context stops the exec stream; removing the
// container is the caller's job (the root package's Host does it).
package hostflow
