// Package localclone owns the host side of local_clone workspaces: it
// checks the host repository a sandbox is copied from, writes the git
// bundle that carries its history in, names the sandbox's branch and
// labels, and takes a sandbox's work back. What comes back is untrusted:
// a bundle's header is parsed here with bounds, only the sandbox's own
// refs are taken, its objects are checked (index-pack --strict) in a
// quarantine repository that borrows the host's objects, and every host
// git command runs with hooks and fsmonitor off.
package localclone
