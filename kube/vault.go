package kube

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podbot/podbot/egressnet"
	"github.com/podbot/podbot/errdefs"
)

// The credential vault on a cluster. The real values and the sandbox CA's
// private key go into a Secret of the proxy's (EgressName, the proxy's
// labels, immutable, owned by the sandbox Pod like the other egress
// objects), which only the proxy Pod mounts, and only in its init
// container "vault": that container copies the three files, mode 0600 and
// owned by the proxy's user, into a memory emptyDir the proxy container
// mounts read-only at egressnet.VaultDirTarget, the form the engine's
// proxy reads (a Secret volume's files are root's, or group-readable with
// fsGroup, which the proxy's own checks refuse for a private file). The
// sandbox gets the CA certificate from the proxy's ConfigMap (key
// vaultCAKey, certificates only) through an init container of its own,
// "vault-trust", that writes it and the CA bundle (the image's system
// bundle followed by the CA) into an emptyDir the sandbox container
// mounts read-only at TrustDir.

// In-sandbox paths of the vault's trust material: those of the engine
// (podbot.VaultTrustDir, podbot.SystemCABundle).
const (
	// TrustDir is where the sandbox container sees the CA and the bundle,
	// read-only.
	TrustDir = "/etc/podbot"
	// SystemCABundle is the image's bundle the sandbox's bundle starts
	// from.
	SystemCABundle = "/etc/ssl/certs/ca-certificates.crt"
)

// Names of the vault's containers, volumes and keys.
const (
	// VaultContainerName is the proxy Pod's init container that copies
	// the vault out of its Secret.
	VaultContainerName = "vault"
	// TrustContainerName is the sandbox Pod's init container that writes
	// the trust files.
	TrustContainerName = "vault-trust"
	// vaultCAKey is the proxy ConfigMap's key of the sandbox CA's
	// certificate.
	vaultCAKey        = "sandbox-ca.pem"
	vaultSecretVolume = "egress-vault-secret"
	vaultVolume       = "egress-vault"
	trustSrcVolume    = "podbot-trust-src"
	trustVolume       = "podbot-trust"
	// vaultSecretMount is where the vault init container reads the Secret.
	vaultSecretMount = "/run/podbot-vault-secret"
	// trustSrcMount is where the trust init container reads the CA.
	trustSrcMount = "/run/podbot-trust-src"
)

// Bounds of the vault's volumes.
const (
	// maxVaultDirBytes bounds the proxy's in-memory vault directory.
	maxVaultDirBytes = 4 << 20
	// MaxSystemBundleBytes bounds the image's system bundle, as on the
	// engine.
	MaxSystemBundleBytes = 4 << 20
	// maxTrustDirBytes bounds the sandbox's trust directory.
	maxTrustDirBytes = 2*MaxSystemBundleBytes + (1 << 20)
)

// EgressVault is an allowlist sandbox's credential vault as the proxy
// reads it: the secrets file (egress.MarshalSecrets), the sandbox CA's
// certificate and private key (PEM). It reaches the proxy Pod in a Secret
// only; the certificate alone reaches the sandbox.
type EgressVault struct {
	Secrets, CACert, CAKey []byte
}

// BuildVaultSecret is the proxy's vault Secret: named and labelled like
// the proxy's other objects (EgressName, egressLabels), type Opaque,
// immutable, keys egressnet.SecretsFile, CACertFile and CAKeyFile. It
// refuses an incomplete vault and data above MaxSecretBytes.
func BuildVaultSecret(sandbox string, v EgressVault) (*corev1.Secret, error) {
	if len(v.Secrets) == 0 || len(v.CACert) == 0 || len(v.CAKey) == 0 {
		return nil, &errdefs.ConfigError{Key: "secrets", Reason: errdefs.ErrMissingRequired,
			Msg: "the credential vault needs its secrets file, the CA certificate and the CA key"}
	}
	if n := len(v.Secrets) + len(v.CACert) + len(v.CAKey); n > MaxSecretBytes {
		return nil, &errdefs.ConfigError{Key: "secrets", Reason: errdefs.ErrInvalidValue,
			Msg: fmt.Sprintf("the credential vault takes %d KiB, more than a Kubernetes Secret holds (%d KiB)", n>>10, MaxSecretBytes>>10)}
	}
	immutable := true
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: EgressName(sandbox), Labels: egressLabels(sandbox)},
		Type:       corev1.SecretTypeOpaque,
		Immutable:  &immutable,
		Data: map[string][]byte{
			egressnet.SecretsFile: append([]byte(nil), v.Secrets...),
			egressnet.CACertFile:  append([]byte(nil), v.CACert...),
			egressnet.CAKeyFile:   append([]byte(nil), v.CAKey...),
		},
	}, nil
}

// vaultCopyScript copies the vault's files from the Secret's mount into
// the proxy's vault directory, each mode 0600 (umask) through a temporary
// name. Every path is a constant.
const vaultCopyScript = `set -eu
umask 077
for f in ` + egressnet.SecretsFile + ` ` + egressnet.CACertFile + ` ` + egressnet.CAKeyFile + `; do
	cat "` + vaultSecretMount + `/$f" > "` + egressnet.VaultDirTarget + `/$f.part"
	mv "` + egressnet.VaultDirTarget + `/$f.part" "` + egressnet.VaultDirTarget + `/$f"
done
`

// withProxyVault gives the proxy Pod its vault: the Secret (mode 0440,
// group the proxy's through fsGroup) mounted read-only in the init
// container VaultContainerName alone, which copies it into a memory
// emptyDir (at most maxVaultDirBytes) that the proxy container mounts
// read-only at egressnet.VaultDirTarget.
func withProxyVault(pod *corev1.Pod, sandbox string) {
	proxy := &pod.Spec.Containers[0]
	mode := int32(0o440)
	no := false
	gid := int64(egressnet.ProxyUser)
	if pod.Spec.SecurityContext.RunAsGroup != nil {
		gid = *pod.Spec.SecurityContext.RunAsGroup
	}
	pod.Spec.SecurityContext.FSGroup = &gid
	pod.Spec.Volumes = append(pod.Spec.Volumes,
		corev1.Volume{Name: vaultSecretVolume, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
			SecretName: EgressName(sandbox), DefaultMode: &mode, Optional: &no}}},
		corev1.Volume{Name: vaultVolume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{
			Medium: corev1.StorageMediumMemory, SizeLimit: resource.NewQuantity(maxVaultDirBytes, resource.BinarySI)}}})
	cp := corev1.Container{
		Name:                     VaultContainerName,
		Image:                    proxy.Image,
		ImagePullPolicy:          proxy.ImagePullPolicy,
		Command:                  []string{"/bin/sh", "-c", vaultCopyScript},
		SecurityContext:          proxy.SecurityContext.DeepCopy(),
		Resources:                *proxy.Resources.DeepCopy(),
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
		VolumeMounts: []corev1.VolumeMount{
			{Name: vaultSecretVolume, MountPath: vaultSecretMount, ReadOnly: true},
			{Name: vaultVolume, MountPath: egressnet.VaultDirTarget},
		},
	}
	cp.SecurityContext.ReadOnlyRootFilesystem = ptr(true)
	// First: the sidecar's install container waits for the host.
	pod.Spec.InitContainers = append([]corev1.Container{cp}, pod.Spec.InitContainers...)
	proxy.VolumeMounts = append(proxy.VolumeMounts, corev1.VolumeMount{Name: vaultVolume, MountPath: egressnet.VaultDirTarget, ReadOnly: true})
}

// trustScript writes the sandbox's trust files: the CA from the proxy's
// ConfigMap, and the bundle, the image's SystemCABundle (when it has one,
// at most MaxSystemBundleBytes, with a newline added if it lacks one)
// followed by the CA, as the engine builds it. Every path is a constant.
const trustScript = `set -eu
ca="` + trustSrcMount + `/` + egressnet.TrustCAFile + `"
d="` + TrustDir + `"
s="` + SystemCABundle + `"
cat "$ca" > "$d/` + egressnet.TrustCAFile + `"
{
	if [ -f "$s" ]; then
		n=$(wc -c < "$s")
		if [ "$n" -gt ` + "%d" + ` ]; then echo "$s is larger than ` + "%d" + ` bytes" >&2; exit 3; fi
		cat "$s"
		if [ -n "$(tail -c 1 "$s")" ]; then echo; fi
	fi
	cat "$ca"
} > "$d/` + egressnet.TrustBundleFile + `"
chmod 0444 "$d/` + egressnet.TrustCAFile + `" "$d/` + egressnet.TrustBundleFile + `"
`

// WithVaultTrust gives a vault sandbox's Pod its trust files: the init
// container TrustContainerName (the sandbox container's image, user,
// security context and limits, a read-only root) reads the CA
// certificate from the proxy's ConfigMap (that key alone) and writes it
// and the bundle into an emptyDir, which the sandbox container mounts
// read-only at TrustDir. Nothing else of the ConfigMap reaches the Pod;
// the sandbox, root included, cannot change what it trusts.
func WithVaultTrust(sandbox string) PodOption {
	return func(pod *corev1.Pod) error {
		sbc := &pod.Spec.Containers[0]
		mode := int32(0o444)
		no := false
		pod.Spec.Volumes = append(pod.Spec.Volumes,
			corev1.Volume{Name: trustSrcVolume, VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
				LocalObjectReference: corev1.LocalObjectReference{Name: EgressName(sandbox)},
				Items:                []corev1.KeyToPath{{Key: vaultCAKey, Path: egressnet.TrustCAFile}},
				DefaultMode:          &mode, Optional: &no}}},
			corev1.Volume{Name: trustVolume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{
				SizeLimit: resource.NewQuantity(maxTrustDirBytes, resource.BinarySI)}}})
		init := corev1.Container{
			Name:                     TrustContainerName,
			Image:                    sbc.Image,
			ImagePullPolicy:          sbc.ImagePullPolicy,
			Command:                  []string{"/bin/sh", "-c", fmt.Sprintf(trustScript, MaxSystemBundleBytes, MaxSystemBundleBytes)},
			SecurityContext:          sbc.SecurityContext.DeepCopy(),
			Resources:                *sbc.Resources.DeepCopy(),
			TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
			VolumeMounts: []corev1.VolumeMount{
				{Name: trustSrcVolume, MountPath: trustSrcMount, ReadOnly: true},
				{Name: trustVolume, MountPath: TrustDir},
			},
		}
		init.SecurityContext.ReadOnlyRootFilesystem = ptr(true)
		pod.Spec.InitContainers = append([]corev1.Container{init}, pod.Spec.InitContainers...)
		sbc.VolumeMounts = append(sbc.VolumeMounts, corev1.VolumeMount{Name: trustVolume, MountPath: TrustDir, ReadOnly: true})
		return nil
	}
}

// vaultCommand is the proxy command's vault flags.
func vaultCommand() []string {
	return []string{"--secrets", egressnet.VaultDirTarget + "/" + egressnet.SecretsFile,
		"--ca-cert", egressnet.VaultDirTarget + "/" + egressnet.CACertFile,
		"--ca-key", egressnet.VaultDirTarget + "/" + egressnet.CAKeyFile}
}
