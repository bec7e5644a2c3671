//go:build kubernetes

package podbot

import (
	"context"
	"io"
	"path"

	"github.com/podbot/podbot/errdefs"
	"github.com/podbot/podbot/kube"
	"github.com/podbot/podbot/launchplan"
	"github.com/podbot/podbot/termsafe"
)

// kubeCloneIO is cloneIO for sandbox Pod name: every step is a pods/exec
// as the Pod's user (the agent's). Files go in over the exec's stdin, and
// the review's bundle comes back over its stdout, bounded by the same
// writer as on the engine.
type kubeCloneIO struct {
	kc   *kube.Client
	name string
}

func (k kubeCloneIO) run(ctx context.Context, argv []string, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	return k.kc.Exec(ctx, k.name, kube.ExecOptions{Cmd: argv, Stdin: stdin, Stdout: stdout, Stderr: stderr})
}

// makeDir cannot do more than the agent's own mkdir: a Pod has no copy
// API. The workspace's parent is an emptyDir (localCloneScratch), so the
// agent can create the copy there.
func (k kubeCloneIO) makeDir(_ context.Context, dir string) error {
	return &errdefs.ContainerError{Op: "copy in", Container: k.name, Reason: errdefs.ErrUnsupported,
		Msg: "the Pod's user cannot create " + termsafe.Line(dir) + " and a Pod has no copy API to make it"}
}

// put streams each file into dir over one exec's stdin (putByExec).
func (k kubeCloneIO) put(ctx context.Context, dir string, files []cloneFile) error {
	return putByExec(ctx, k.run, k.name, dir, files)
}

// localCloneIO reaches the Pod through pods/exec.
func (b *kubeBackend) localCloneIO(id string) cloneIO { return kubeCloneIO{kc: b.kc, name: id} }

// localCloneScratch is the directory a local_clone workspace at dir needs
// writable in a Pod: its parent, where the copy is made (an emptyDir). The
// Pod starts there, since the copy does not exist yet.
func localCloneScratch(plan launchplan.Plan) (string, error) {
	base := path.Dir(plan.WorkingDir)
	if base == "/" || !path.IsAbs(base) {
		return "", &errdefs.ConfigError{Key: "workspace.base_dir", Reason: errdefs.ErrInvalidValue,
			Msg: "a local_clone workspace at " + termsafe.Line(plan.WorkingDir) + " has / as its parent, which cannot be a Pod's writable volume; set workspace.base_dir (default /workspace)"}
	}
	return base, nil
}

// OpenKubeReview is OpenReview for a sandbox Pod: the Pod ref must be
// podbot's, running, and made from the repository at repoPath. Its
// annotations carry the local-clone labels (a path is no label value).
// The bundle comes back over a pods/exec stdout with the same bounds and
// the same checks as on the engine.
func OpenKubeReview(ctx context.Context, kc *kube.Client, ref, repoPath string, environ []string) (*Review, error) {
	sb, err := kc.Get(ctx, ref, false)
	if err != nil {
		return nil, err
	}
	return openReview(ctx, KubeContainer(sb), sb.Running(), "a Pod cannot be started again: its work went with it",
		kubeCloneIO{kc: kc, name: sb.Name}, repoPath, environ)
}
