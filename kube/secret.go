package kube

import (
	"fmt"
	"maps"
	"path"
	"regexp"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podbot/podbot/errdefs"
	"github.com/podbot/podbot/launchplan"
)

// SecretMountPath is where a sandbox's Secret is mounted, read-only, in
// its container.
const SecretMountPath = "/run/podbot/secret"

// SecretCredentialsKey is the Secret key holding the credential archive
// (the agent's credential files and git identity as one tar, extracted
// into the agent's home by an exec once the Pod runs).
const SecretCredentialsKey = "credentials.tar"

// secretEnvPrefix prefixes the Secret keys of the agent's variables: key
// "env.NAME" holds the value of NAME.
const secretEnvPrefix = "env."

// MaxSecretBytes bounds a sandbox Secret's data. The API server refuses a
// Secret above 1 MiB; this leaves room for its metadata.
const MaxSecretBytes = 900 << 10

// secretVolume is the Pod volume name of the sandbox's Secret.
const secretVolume = "podbot-secret"

// envName is a variable name the Secret and the exec wrapper accept.
var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// SecretData is what enters a sandbox through its Secret.
type SecretData struct {
	// Credentials is the credential archive (a tar); nil for none.
	Credentials []byte
	// Env are the agent's variables (KEY=VALUE): they reach the agent's
	// exec through SecretEnvCommand, never the Pod spec.
	Env []string
}

// Empty reports whether there is nothing to put in a Secret.
func (d SecretData) Empty() bool { return len(d.Credentials) == 0 && len(d.Env) == 0 }

// BuildSecret is the sandbox Pod's Secret: type Opaque, immutable, named
// and labelled like the Pod (podbot.managed, podbot.session), holding the
// credential archive and one key per agent variable. It refuses a
// variable name a shell cannot export and data above MaxSecretBytes.
func BuildSecret(pod *corev1.Pod, d SecretData) (*corev1.Secret, error) {
	data := map[string][]byte{}
	size := 0
	if len(d.Credentials) > 0 {
		data[SecretCredentialsKey] = d.Credentials
		size += len(d.Credentials)
	}
	for _, e := range d.Env {
		k, v, ok := strings.Cut(e, "=")
		if !ok || !envName.MatchString(k) {
			return nil, &errdefs.ConfigError{Key: "agent.env_allowlist", Reason: errdefs.ErrInvalidValue,
				Msg: fmt.Sprintf("variable %q cannot go into the sandbox's Secret: a name is letters, digits and '_', not starting with a digit", bounded(k))}
		}
		data[secretEnvPrefix+k] = []byte(v)
		size += len(k) + len(v)
	}
	if size > MaxSecretBytes {
		return nil, &errdefs.ConfigError{Key: "creds", Reason: errdefs.ErrInvalidValue,
			Msg: fmt.Sprintf("the credentials and agent variables take %d KiB, more than a Kubernetes Secret holds (%d KiB); add large files under ~/.claude or ~/.codex to creds.exclude, or set creds.copy_claude / creds.copy_codex = false",
				size>>10, MaxSecretBytes>>10)}
	}
	immutable := true
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name: pod.Name,
			Labels: map[string]string{
				launchplan.LabelManaged: "true",
				launchplan.LabelSession: pod.Labels[launchplan.LabelSession],
			},
		},
		Type:      corev1.SecretTypeOpaque,
		Immutable: &immutable,
		Data:      data,
	}, nil
}

// WithSecretVolume mounts the Secret name read-only at SecretMountPath in
// the sandbox container. Its files are mode 0440, owned by the Pod's
// group (fsGroup), so the agent's user alone reads them.
func WithSecretVolume(name string) PodOption {
	return func(pod *corev1.Pod) error {
		mode := int32(0o440)
		no := false
		pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: secretVolume, VolumeSource: corev1.VolumeSource{
			Secret: &corev1.SecretVolumeSource{SecretName: name, DefaultMode: &mode, Optional: &no},
		}})
		c := &pod.Spec.Containers[0]
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: secretVolume, MountPath: SecretMountPath, ReadOnly: true})
		if sc := pod.Spec.SecurityContext; sc != nil && sc.RunAsGroup != nil {
			g := *sc.RunAsGroup
			sc.FSGroup = &g
		}
		return nil
	}
}

// WithScratchDirs mounts an empty, writable directory (an emptyDir on the
// node's disk) at each of dirs: the agent's home and the workspace, which
// a non-root agent could not create in the image.
func WithScratchDirs(dirs ...string) PodOption {
	return func(pod *corev1.Pod) error {
		c := &pod.Spec.Containers[0]
		seen := map[string]bool{}
		for _, m := range c.VolumeMounts {
			seen[m.MountPath] = true
		}
		for i, d := range slices.Sorted(maps.Keys(setOf(dirs))) {
			if !cleanPath(d) || d == "/" {
				return &errdefs.ConfigError{Key: "workspace.base_dir", Reason: errdefs.ErrInvalidValue,
					Msg: fmt.Sprintf("%q is not an absolute, clean directory", bounded(d))}
			}
			if seen[d] {
				continue
			}
			name := fmt.Sprintf("scratch-%d", i)
			pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
			c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: name, MountPath: d})
		}
		return nil
	}
}

func setOf(xs []string) map[string]bool {
	m := make(map[string]bool, len(xs))
	for _, x := range xs {
		if x != "" {
			m[x] = true
		}
	}
	return m
}

// secretEnvScript exports each variable named in "$@" up to "--" from its
// file in the Secret (keeping trailing newlines), then runs the rest.
const secretEnvScript = `d=$1; shift
while [ "$#" -gt 0 ] && [ "$1" != -- ]; do
	v=$(cat "$d/env.$1" && printf x) || exit 126
	export "$1=${v%x}"
	shift
done
shift
exec "$@"`

// SecretEnvCommand wraps cmd so that it runs with the variables names set
// from the sandbox's Secret. Only the names travel in the exec request
// (whose command the API server sees); the values are read inside the
// container from the read-only mount. It returns cmd unchanged when names
// is empty, and refuses a name BuildSecret would not have stored.
func SecretEnvCommand(names, cmd []string) ([]string, error) {
	if len(names) == 0 {
		return cmd, nil
	}
	out := []string{"/bin/sh", "-c", secretEnvScript, "sh", SecretMountPath}
	for _, n := range names {
		if !envName.MatchString(n) {
			return nil, &errdefs.ContainerError{Op: "kubernetes exec", Reason: errdefs.ErrInvalidValue,
				Msg: fmt.Sprintf("variable name %q cannot come from the sandbox's Secret", bounded(n))}
		}
		out = append(out, n)
	}
	out = append(out, "--")
	return append(out, cmd...), nil
}

// secretPath is the in-container path of a Secret key.
func secretPath(key string) string { return path.Join(SecretMountPath, key) }

// CredentialsArchivePath is where the credential archive is in the container.
func CredentialsArchivePath() string { return secretPath(SecretCredentialsKey) }
