package kube

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/podbot/podbot/egress"
	"github.com/podbot/podbot/egressnet"
	"github.com/podbot/podbot/errdefs"
	"github.com/podbot/podbot/launchplan"
)

// An allowlist sandbox on a cluster is two Pods: the sandbox, whose
// NetworkPolicy lets it reach nothing but its proxy's port, and its egress
// proxy (`podbot-sidecar egress`, streamed in like a tool Pod's sidecar),
// whose NetworkPolicy admits the sandbox alone and lets it out to public
// addresses only. The proxy's policy file is a ConfigMap mounted
// read-only. Proxy Pod, ConfigMap and proxy NetworkPolicy share one name
// (EgressName), carry egressnet.LabelSandbox and egressnet.LabelRole, and
// are owned by the sandbox Pod.

// Limits of the proxy Pod: those of the engine's proxy container.
const (
	egressMemory   = 256 << 20
	egressNanoCPUs = 500_000_000
	// MaxUpstreamCABytes bounds network.upstream_ca read from the host.
	MaxUpstreamCABytes = 512 << 10
)

// EgressContainerName is the proxy's container in its Pod.
const EgressContainerName = "egress"

// Keys of the proxy's ConfigMap and where it is mounted.
const (
	egressPolicyKey     = egressnet.PolicyFile
	egressUpstreamCAKey = "upstream.pem"
	egressPolicyVolume  = "egress-policy"
	egressLogVolume     = "egress-log"
)

// egressExcept are the ranges the proxy Pod may never reach directly:
// private, loopback, link-local (the cloud metadata service), shared
// (carrier-grade NAT, also used for cluster ranges), "this network",
// multicast and reserved. The proxy refuses them by itself as well, unless
// a rule names the exact host (egress.Policy.CheckAddress); the
// NetworkPolicy is the cluster's own guard.
var egressExcept = []string{
	"0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16",
	"172.16.0.0/12", "192.168.0.0/16", "224.0.0.0/4", "240.0.0.0/4",
}

// egressExcept6 are the IPv6 ranges of the same kinds.
var egressExcept6 = []string{"::1/128", "fc00::/7", "fe80::/10", "ff00::/8"}

// EgressName is the name of sandbox's proxy Pod, ConfigMap and proxy
// NetworkPolicy: "egress-" and the sandbox's name, shortened with a hash
// when that would pass 63 characters.
func EgressName(sandbox string) string {
	name := "egress-" + sandbox
	if len(name) <= 63 {
		return name
	}
	sum := sha256.Sum256([]byte(sandbox))
	return "egress-" + sandbox[:45] + "-" + hex.EncodeToString(sum[:])[:10]
}

// egressLabels are the labels of sandbox's egress objects. They carry no
// podbot.managed label: the proxy Pod is not a sandbox for ps, and no
// sandbox NetworkPolicy selects it.
func egressLabels(sandbox string) map[string]string {
	return map[string]string{egressnet.LabelSandbox: sandbox, egressnet.LabelRole: egressnet.RoleProxy}
}

// BuildEgressConfigMap is the proxy's configuration: the policy file (as
// egress.ReadPolicyFile reads it) and, when upstreamCA is set, the PEM
// bundle of network.upstream_ca; with a vault, sandboxCA is the sandbox
// CA's certificate (never its key), which the sandbox's trust init
// container reads (WithVaultTrust). It holds no secret.
func BuildEgressConfigMap(sandbox string, pol *egress.Policy, upstreamCA, sandboxCA []byte) (*corev1.ConfigMap, error) {
	data, err := egress.MarshalPolicy(pol)
	if err != nil {
		return nil, err
	}
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: EgressName(sandbox), Labels: egressLabels(sandbox)},
		Data:       map[string]string{egressPolicyKey: string(data)},
	}
	if len(upstreamCA) > 0 {
		cm.Data[egressUpstreamCAKey] = string(upstreamCA)
	}
	if len(sandboxCA) > 0 {
		cm.Data[vaultCAKey] = string(sandboxCA)
	}
	return cm, nil
}

// EgressCommand is the proxy container's command; vault adds the
// credential vault's files (withProxyVault).
func EgressCommand(upstreamCA, vault bool) []string {
	cmd := []string{SidecarPath, "egress",
		"--listen", "0.0.0.0:" + strconv.Itoa(egressnet.ProxyPort),
		"--policy", egressnet.PolicyDirTarget + "/" + egressPolicyKey,
		"--log", egressnet.LogDirTarget + "/" + egressnet.LogFile}
	if upstreamCA {
		cmd = append(cmd, "--upstream-ca", egressnet.PolicyDirTarget+"/"+egressUpstreamCAKey)
	}
	if vault {
		cmd = append(cmd, vaultCommand()...)
	}
	return cmd
}

// BuildEgressPod is sandbox's proxy Pod: image (the sandbox's), hardened
// as BuildPod hardens a sandbox (user nobody, read-only root, every
// capability dropped, the runtime's seccomp profile, no service-account
// token), with the sidecar install container of BuildToolPod, the
// ConfigMap read-only at egressnet.PolicyDirTarget and an emptyDir for the
// decision log. It restarts in place if the proxy exits (the sidecar and
// the Pod's address stay). With vault set the proxy also gets the
// credential vault (withProxyVault): the only Pod that mounts its Secret.
func BuildEgressPod(sandbox, image string, upstreamCA, vault bool, opts Options) (*corev1.Pod, error) {
	plan := launchplan.Plan{
		Name:        EgressName(sandbox),
		Image:       image,
		User:        strconv.Itoa(egressnet.ProxyUser),
		InitCommand: EgressCommand(upstreamCA, vault),
		Labels:      egressLabels(sandbox),
		Tmpfs:       map[string]string{"/tmp": "rw,noexec,nosuid,nodev,size=16m"},
		Resources:   launchplan.Resources{MemoryBytes: egressMemory, NanoCPUs: egressNanoCPUs},
	}
	plan.Security.ReadOnlyRootfs = true
	pod, err := BuildToolPod(plan, opts)
	if err != nil {
		return nil, err
	}
	pod.Spec.RestartPolicy = corev1.RestartPolicyAlways
	proxy := &pod.Spec.Containers[0]
	proxy.Name = EgressContainerName
	proxy.WorkingDir = "/"
	proxy.Ports = []corev1.ContainerPort{{Name: "proxy", ContainerPort: egressnet.ProxyPort, Protocol: corev1.ProtocolTCP}}
	// No workspace: the proxy writes its log and nothing else.
	var mounts []corev1.VolumeMount
	for _, m := range proxy.VolumeMounts {
		if m.Name != workspaceVolume {
			mounts = append(mounts, m)
		}
	}
	proxy.VolumeMounts = append(mounts,
		corev1.VolumeMount{Name: egressPolicyVolume, MountPath: egressnet.PolicyDirTarget, ReadOnly: true},
		corev1.VolumeMount{Name: egressLogVolume, MountPath: egressnet.LogDirTarget})
	var vols []corev1.Volume
	for _, v := range pod.Spec.Volumes {
		if v.Name != workspaceVolume {
			vols = append(vols, v)
		}
	}
	mode := int32(0o444)
	pod.Spec.Volumes = append(vols,
		corev1.Volume{Name: egressPolicyVolume, VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: EgressName(sandbox)}, DefaultMode: &mode}}},
		corev1.Volume{Name: egressLogVolume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{
			SizeLimit: tmpfsSize("size=64m")}}})
	if vault {
		withProxyVault(pod, sandbox)
	}
	return pod, nil
}

// BuildEgressNetworkPolicy is the proxy Pod's NetworkPolicy: ingress only
// from its sandbox's Pod (podbot's session label) on the proxy port;
// egress to public addresses on any port (0.0.0.0/0 and ::/0 minus
// egressExcept) and to the cluster's DNS (kube-dns in kube-system, port
// 53), since the proxy resolves names for the sandbox.
func BuildEgressNetworkPolicy(sandbox, session string) *networkingv1.NetworkPolicy {
	tcp, udp := corev1.ProtocolTCP, corev1.ProtocolUDP
	proxyPort := intstr.FromInt32(egressnet.ProxyPort)
	dns := intstr.FromInt32(53)
	return &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: EgressName(sandbox), Labels: egressLabels(sandbox)},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: egressLabels(sandbox)},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress},
			Ingress: []networkingv1.NetworkPolicyIngressRule{{
				From:  []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{MatchLabels: sessionSelector(session)}}},
				Ports: []networkingv1.NetworkPolicyPort{{Protocol: &tcp, Port: &proxyPort}},
			}},
			Egress: []networkingv1.NetworkPolicyEgressRule{
				{To: []networkingv1.NetworkPolicyPeer{
					{IPBlock: &networkingv1.IPBlock{CIDR: "0.0.0.0/0", Except: append([]string(nil), egressExcept...)}},
					{IPBlock: &networkingv1.IPBlock{CIDR: "::/0", Except: append([]string(nil), egressExcept6...)}},
				}},
				{
					To: []networkingv1.NetworkPolicyPeer{{
						NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": "kube-system"}},
						PodSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{"k8s-app": "kube-dns"}},
					}},
					Ports: []networkingv1.NetworkPolicyPort{{Protocol: &udp, Port: &dns}, {Protocol: &tcp, Port: &dns}},
				},
			},
		},
	}
}

// sessionSelector selects a sandbox's Pod, as its own NetworkPolicy does.
func sessionSelector(session string) map[string]string {
	return map[string]string{launchplan.LabelManaged: "true", launchplan.LabelSession: session}
}

// allowlistEgress is the sandbox NetworkPolicy's only egress rule in mode
// allowlist: TCP to its proxy Pod's port. No DNS: the proxy resolves.
func allowlistEgress(sandbox string) []networkingv1.NetworkPolicyEgressRule {
	tcp := corev1.ProtocolTCP
	port := intstr.FromInt32(egressnet.ProxyPort)
	return []networkingv1.NetworkPolicyEgressRule{{
		To:    []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{MatchLabels: egressLabels(sandbox)}}},
		Ports: []networkingv1.NetworkPolicyPort{{Protocol: &tcp, Port: &port}},
	}}
}

// withEgressProxy points the sandbox container at the proxy at addr
// (egressnet.SandboxEnv, not secret) and gives the Pod no usable resolver
// (egressnet.SandboxDNS), as on the engine.
func withEgressProxy(pod *corev1.Pod, addr string) {
	c := &pod.Spec.Containers[0]
	u := "http://" + addr + ":" + strconv.Itoa(egressnet.ProxyPort)
	for _, k := range []string{"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"} {
		c.Env = append(c.Env, corev1.EnvVar{Name: k, Value: u})
	}
	c.Env = append(c.Env, corev1.EnvVar{Name: "NO_PROXY", Value: "localhost,127.0.0.1"}, corev1.EnvVar{Name: "no_proxy", Value: "localhost,127.0.0.1"})
	pod.Spec.DNSPolicy = corev1.DNSNone
	pod.Spec.DNSConfig = &corev1.PodDNSConfig{Nameservers: append([]string(nil), egressnet.SandboxDNS...)}
}

// WithSidecar returns a client like c that runs allowlist sandboxes'
// egress proxies from sc. Without one, an allowlist plan is refused.
func (c *Client) WithSidecar(sc *Sidecar) *Client {
	cp := *c
	cp.sidecar = sc
	return &cp
}

// readUpstreamCA reads network.upstream_ca from the host, bounded.
func readUpstreamCA(path string) ([]byte, error) {
	if path == "" {
		return nil, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, &errdefs.FilesystemError{Op: "read network.upstream_ca", Path: path, Err: err}
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxUpstreamCABytes+1))
	if err != nil {
		return nil, &errdefs.FilesystemError{Op: "read network.upstream_ca", Path: path, Err: err}
	}
	if len(data) > MaxUpstreamCABytes {
		return nil, &errdefs.FilesystemError{Op: "read network.upstream_ca", Path: path, Reason: errdefs.ErrRefused,
			Msg: fmt.Sprintf("larger than %d KiB", MaxUpstreamCABytes>>10)}
	}
	return data, nil
}

// startEgress makes sandbox pod's proxy: its ConfigMap, with a vault (v
// non-nil) its vault Secret, its NetworkPolicy and its Pod, with the
// sidecar streamed in, and waits until the proxy runs. It returns the
// proxy Pod's address. On failure the caller deletes what was made
// (deleteEgress).
func (c *Client) startEgress(ctx context.Context, pod *corev1.Pod, eg launchplan.Egress, v *EgressVault) (string, error) {
	if c.sidecar == nil {
		return "", &errdefs.ConfigError{Key: "network.mode", Reason: errdefs.ErrMissingRequired,
			Msg: "allowlist mode runs the egress proxy from podbot-sidecar, streamed into a Pod; install podbot-sidecar next to podbot or set PODBOT_SIDECAR_PATH"}
	}
	ca, err := readUpstreamCA(eg.UpstreamCA)
	if err != nil {
		return "", err
	}
	var sandboxCA []byte
	var secret *corev1.Secret
	if v != nil {
		if secret, err = BuildVaultSecret(pod.Name, *v); err != nil {
			return "", err
		}
		sandboxCA = v.CACert
	}
	cm, err := BuildEgressConfigMap(pod.Name, &eg.Policy, ca, sandboxCA)
	if err != nil {
		return "", err
	}
	proxy, err := BuildEgressPod(pod.Name, pod.Spec.Containers[0].Image, len(ca) > 0, v != nil, c.opts)
	if err != nil {
		return "", err
	}
	np := BuildEgressNetworkPolicy(pod.Name, pod.Labels[launchplan.LabelSession])
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), callTimeout)
	defer cancel()
	if _, err := c.cs.CoreV1().ConfigMaps(c.namespace).Create(cctx, cm, metav1.CreateOptions{}); err != nil {
		return "", c.classify("create egress config map", cm.Name, err)
	}
	if secret != nil {
		if _, err := c.cs.CoreV1().Secrets(c.namespace).Create(cctx, secret, metav1.CreateOptions{}); err != nil {
			return "", c.classify("create egress vault secret", secret.Name, err)
		}
	}
	if _, err := c.cs.NetworkingV1().NetworkPolicies(c.namespace).Create(cctx, np, metav1.CreateOptions{}); err != nil {
		return "", c.classify("create egress network policy", np.Name, err)
	}
	if _, err := c.cs.CoreV1().Pods(c.namespace).Create(cctx, proxy, metav1.CreateOptions{}); err != nil {
		return "", c.classify("create egress proxy", proxy.Name, err)
	}
	if err := ctx.Err(); err != nil {
		return "", c.classify("create egress proxy", proxy.Name, err)
	}
	if err := c.waitInstallRunning(ctx, proxy.Name); err != nil {
		return "", err
	}
	if err := c.installSidecar(ctx, proxy.Name, c.sidecar); err != nil {
		return "", err
	}
	run, err := c.waitRunning(ctx, proxy.Name)
	if err != nil {
		return "", err
	}
	if run.Status.PodIP == "" {
		return "", &errdefs.ContainerError{Op: "kubernetes create egress proxy", Container: proxy.Name, Reason: errdefs.ErrUnavailable,
			Msg: "the proxy Pod runs but has no address"}
	}
	return run.Status.PodIP, nil
}

// ownEgress makes the sandbox Pod owner the owner of its egress objects
// (with vault, its vault Secret too), so deleting the Pod by any means
// deletes them too.
func (c *Client) ownEgress(ctx context.Context, sandbox string, owner metav1.OwnerReference, vault bool) error {
	name := EgressName(sandbox)
	refs := []metav1.OwnerReference{owner}
	var errs []error
	if p, err := c.cs.CoreV1().Pods(c.namespace).Get(ctx, name, metav1.GetOptions{}); err != nil {
		errs = append(errs, err)
	} else {
		p.OwnerReferences = refs
		_, err = c.cs.CoreV1().Pods(c.namespace).Update(ctx, p, metav1.UpdateOptions{})
		errs = append(errs, err)
	}
	if m, err := c.cs.CoreV1().ConfigMaps(c.namespace).Get(ctx, name, metav1.GetOptions{}); err != nil {
		errs = append(errs, err)
	} else {
		m.OwnerReferences = refs
		_, err = c.cs.CoreV1().ConfigMaps(c.namespace).Update(ctx, m, metav1.UpdateOptions{})
		errs = append(errs, err)
	}
	if np, err := c.cs.NetworkingV1().NetworkPolicies(c.namespace).Get(ctx, name, metav1.GetOptions{}); err != nil {
		errs = append(errs, err)
	} else {
		np.OwnerReferences = refs
		_, err = c.cs.NetworkingV1().NetworkPolicies(c.namespace).Update(ctx, np, metav1.UpdateOptions{})
		errs = append(errs, err)
	}
	if vault {
		// An immutable Secret's metadata may still change.
		if s, err := c.cs.CoreV1().Secrets(c.namespace).Get(ctx, name, metav1.GetOptions{}); err != nil {
			errs = append(errs, err)
		} else {
			s.OwnerReferences = refs
			_, err = c.cs.CoreV1().Secrets(c.namespace).Update(ctx, s, metav1.UpdateOptions{})
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return c.classify("own egress objects", name, err)
	}
	return nil
}

// deleteEgress deletes sandbox's proxy Pod, ConfigMap, vault Secret and
// proxy NetworkPolicy, each only when its labels say it is that sandbox's proxy
// object (a same-named object of anyone else's stays). Missing ones are
// not an error.
func (c *Client) deleteEgress(ctx context.Context, sandbox string) error {
	name := EgressName(sandbox)
	ours := func(l map[string]string) bool {
		return l[egressnet.LabelSandbox] == sandbox && l[egressnet.LabelRole] == egressnet.RoleProxy
	}
	var errs []error
	keep := func(op string, err error) {
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, c.classify(op, name, err))
		}
	}
	grace := int64(0)
	if p, err := c.cs.CoreV1().Pods(c.namespace).Get(ctx, name, metav1.GetOptions{}); err == nil && ours(p.Labels) {
		keep("delete egress proxy", c.cs.CoreV1().Pods(c.namespace).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &grace}))
	} else {
		keep("get egress proxy", err)
	}
	if m, err := c.cs.CoreV1().ConfigMaps(c.namespace).Get(ctx, name, metav1.GetOptions{}); err == nil && ours(m.Labels) {
		keep("delete egress config map", c.cs.CoreV1().ConfigMaps(c.namespace).Delete(ctx, name, metav1.DeleteOptions{}))
	} else {
		keep("get egress config map", err)
	}
	if s, err := c.cs.CoreV1().Secrets(c.namespace).Get(ctx, name, metav1.GetOptions{}); err == nil && ours(s.Labels) {
		keep("delete egress vault secret", c.cs.CoreV1().Secrets(c.namespace).Delete(ctx, name, metav1.DeleteOptions{}))
	} else {
		keep("get egress vault secret", err)
	}
	if np, err := c.cs.NetworkingV1().NetworkPolicies(c.namespace).Get(ctx, name, metav1.GetOptions{}); err == nil && ours(np.Labels) {
		keep("delete egress network policy", c.cs.NetworkingV1().NetworkPolicies(c.namespace).Delete(ctx, name, metav1.DeleteOptions{}))
	} else {
		keep("get egress network policy", err)
	}
	return errors.Join(errs...)
}
