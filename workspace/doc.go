// Package workspace prepares where an agent sees source code: it validates
// GitHub repository references and branch names, builds the argv of a clone
// inside the container (credentials through GIT_ASKPASS, never in a URL or
// argv), and resolves host directories for bind mounts under a strict path
// policy: canonicalised with symlinks resolved, inside an allowed root after
// resolution, never the filesystem root, never through a symlink that leads
// outside.
package workspace
