package kube

import (
	"fmt"
	"maps"
	"path"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/podbot/podbot/config"
	"github.com/podbot/podbot/egress"
	"github.com/podbot/podbot/errdefs"
	"github.com/podbot/podbot/launchplan"
)

// ContainerName is the name of the sandbox's one container in its Pod.
const ContainerName = "sandbox"

// DefaultUID is the user a plan without sandbox.user runs as: an image's
// user cannot be read from the API server before the Pod runs, and Pods
// run as non-root unless the configuration says otherwise.
const DefaultUID = 65534

// Resource requests of a sandbox container: the scheduler reserves this
// much, the plan's limits cap it.
var (
	requestCPU    = resource.MustParse("100m")
	requestMemory = resource.MustParse("128Mi")
)

// BuildPod turns a launch plan into a hardened Pod: non-root where the
// plan allows it, no privilege escalation, capabilities dropped to the
// plan's short list, the runtime's seccomp profile, the plan's read-only
// root and limits, no service-account token, no service links, no host
// namespace or path. A plan the backend cannot run (privileged, host
// mounts, devices, a named engine network) is refused with an
// *errdefs.ConfigError naming the key.
func BuildPod(plan launchplan.Plan, opts Options) (*corev1.Pod, error) {
	if err := supported(plan); err != nil {
		return nil, err
	}
	if errs := validation.IsDNS1123Subdomain(plan.Name); len(errs) > 0 || len(plan.Name) > 63 {
		return nil, &errdefs.ConfigError{Key: "name", Reason: errdefs.ErrInvalidValue,
			Msg: fmt.Sprintf("%q is not a Pod name: use at most 63 lower-case letters, digits, '-' and '.'", plan.Name)}
	}
	labels, annotations, err := podLabels(plan.Labels)
	if err != nil {
		return nil, err
	}
	uid, gid, err := planUser(plan.User)
	if err != nil {
		return nil, err
	}
	no := false
	grace := int64(1)
	nonRoot := uid != 0
	caps := &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}
	for _, c := range plan.Security.CapAdd {
		caps.Add = append(caps.Add, corev1.Capability(c))
	}
	container := corev1.Container{
		Name:       ContainerName,
		Image:      plan.Image,
		Command:    slices.Clone(plan.InitCommand),
		WorkingDir: plan.WorkingDir,
		SecurityContext: &corev1.SecurityContext{
			Privileged:               &no,
			AllowPrivilegeEscalation: &no,
			ReadOnlyRootFilesystem:   ptr(plan.Security.ReadOnlyRootfs),
			RunAsNonRoot:             &nonRoot,
			Capabilities:             caps,
			SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		},
		Resources:                resources(plan.Resources),
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
		ImagePullPolicy:          corev1.PullPolicy(opts.ImagePullPolicy),
	}
	for _, e := range plan.Env {
		k, v, _ := strings.Cut(e, "=")
		container.Env = append(container.Env, corev1.EnvVar{Name: k, Value: v})
	}
	var volumes []corev1.Volume
	for _, target := range slices.Sorted(maps.Keys(plan.Tmpfs)) {
		name := fmt.Sprintf("tmpfs-%d", len(volumes))
		volumes = append(volumes, corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{
			EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory, SizeLimit: tmpfsSize(plan.Tmpfs[target])},
		}})
		container.VolumeMounts = append(container.VolumeMounts, corev1.VolumeMount{Name: name, MountPath: target})
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: plan.Name, Labels: labels, Annotations: annotations},
		Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyNever,
			AutomountServiceAccountToken:  &no,
			EnableServiceLinks:            &no,
			HostNetwork:                   false,
			HostPID:                       false,
			HostIPC:                       false,
			HostUsers:                     nil,
			ShareProcessNamespace:         &no,
			TerminationGracePeriodSeconds: &grace,
			ServiceAccountName:            opts.ServiceAccount,
			NodeSelector:                  maps.Clone(opts.NodeSelector),
			SecurityContext: &corev1.PodSecurityContext{
				RunAsUser:      &uid,
				RunAsGroup:     &gid,
				RunAsNonRoot:   &nonRoot,
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			Containers: []corev1.Container{container},
			Volumes:    volumes,
		},
	}
	for _, t := range opts.Tolerations {
		pod.Spec.Tolerations = append(pod.Spec.Tolerations, toleration(t))
	}
	if opts.RuntimeClass != "" {
		rc := opts.RuntimeClass
		pod.Spec.RuntimeClassName = &rc
	}
	return pod, nil
}

// supported refuses what a Pod cannot carry without weakening the sandbox
// or reaching into the node.
func supported(plan launchplan.Plan) error {
	switch {
	case plan.Security.Privileged:
		return unsupported("sandbox.privileged", "the privileged profile (and nested containers, which need it) is refused: the test cluster runs --allow-privileged=false and a privileged Pod owns its node; set sandbox.privileged = false")
	case len(plan.Security.Devices) > 0:
		return unsupported("sandbox.mount_dev_fuse", "host devices (/dev/fuse) cannot be mapped into a Pod without the privileged profile; set sandbox.mount_dev_fuse = false")
	case len(plan.Security.GPUs) > 0:
		return unsupported("sandbox.gpus", "CDI GPUs are not supported yet (use kubernetes.node_selector and a device plugin's resources)")
	case len(plan.Mounts) > 0:
		return unsupported("workspace", fmt.Sprintf("host mounts (%s at %s) need a host path, which a Pod never gets; use a cloned workspace", plan.Mounts[0].Origin, plan.Mounts[0].Target))
	case plan.Egress.Mode == egress.ModeAllowlist && plan.Network == "none":
		return unsupported("sandbox.network", "network.mode = \"allowlist\" reaches the egress proxy over the Pod network; leave sandbox.network empty")
	}
	switch plan.Network {
	case "", "none", "bridge":
	default:
		return unsupported("sandbox.network", fmt.Sprintf("engine network %q does not exist on a cluster; leave sandbox.network empty or set none", plan.Network))
	}
	return nil
}

// podLabels returns the plan's labels as Pod labels, and all of them again
// as annotations (a label value Kubernetes cannot hold, such as a long
// one, is kept as an annotation only). podbot's own selector labels must
// be valid.
func podLabels(in map[string]string) (labels, annotations map[string]string, err error) {
	labels, annotations = map[string]string{}, map[string]string{}
	for k, v := range in {
		annotations[k] = v
		keyOK := len(validation.IsQualifiedName(k)) == 0
		valOK := len(validation.IsValidLabelValue(v)) == 0
		if keyOK && valOK {
			labels[k] = v
			continue
		}
		switch k {
		case launchplan.LabelManaged, launchplan.LabelSession, launchplan.LabelIntent:
			return nil, nil, &errdefs.ConfigError{Key: "session", Reason: errdefs.ErrInvalidValue,
				Msg: fmt.Sprintf("label %s=%q cannot be a Kubernetes label (at most 63 letters, digits, '-', '_', '.')", k, v)}
		}
	}
	return labels, annotations, nil
}

// planUser maps sandbox.user to numeric ids: empty is DefaultUID, "uid" or
// "uid:gid" as given, root is 0. A Pod cannot name a user, only a number.
func planUser(u string) (uid, gid int64, err error) {
	if u == "" {
		return DefaultUID, DefaultUID, nil
	}
	if u == "root" {
		return 0, 0, nil
	}
	us, gs, hasGroup := strings.Cut(u, ":")
	if uid, err = strconv.ParseInt(us, 10, 32); err != nil || uid < 0 {
		return 0, 0, &errdefs.ConfigError{Key: "sandbox.user", Reason: errdefs.ErrUnsupported,
			Msg: fmt.Sprintf("%q: a Pod's user must be numeric (uid or uid:gid) on the kubernetes backend", u)}
	}
	gid = uid
	if hasGroup {
		if gid, err = strconv.ParseInt(gs, 10, 32); err != nil || gid < 0 {
			return 0, 0, &errdefs.ConfigError{Key: "sandbox.user", Reason: errdefs.ErrUnsupported,
				Msg: fmt.Sprintf("%q: a Pod's group must be numeric (uid:gid) on the kubernetes backend", u)}
		}
	}
	return uid, gid, nil
}

// resources maps the plan's limits: memory and CPU become limits, with
// small requests so a sandbox schedules on a busy node. The process limit
// has no Pod field (it is the kubelet's podPidsLimit).
func resources(r launchplan.Resources) corev1.ResourceRequirements {
	out := corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: requestCPU, corev1.ResourceMemory: requestMemory},
		Limits:   corev1.ResourceList{},
	}
	if r.MemoryBytes > 0 {
		out.Limits[corev1.ResourceMemory] = *resource.NewQuantity(r.MemoryBytes, resource.BinarySI)
		if r.MemoryBytes < requestMemory.Value() {
			out.Requests[corev1.ResourceMemory] = *resource.NewQuantity(r.MemoryBytes, resource.BinarySI)
		}
	}
	if r.NanoCPUs > 0 {
		milli := max(r.NanoCPUs/1e6, 1)
		out.Limits[corev1.ResourceCPU] = *resource.NewMilliQuantity(milli, resource.DecimalSI)
		if milli < requestCPU.MilliValue() {
			out.Requests[corev1.ResourceCPU] = *resource.NewMilliQuantity(milli, resource.DecimalSI)
		}
	}
	return out
}

// tmpfsSize reads a size= option of a tmpfs mount ("size=64m,...") as an
// emptyDir size limit; nil when there is none.
func tmpfsSize(opts string) *resource.Quantity {
	for _, o := range strings.Split(opts, ",") {
		if v, ok := strings.CutPrefix(o, "size="); ok {
			if q, err := resource.ParseQuantity(strings.ToUpper(strings.TrimSuffix(v, "b")) + "i"); err == nil {
				return &q
			}
		}
	}
	return nil
}

// BuildNetworkPolicy is the sandbox's own NetworkPolicy, selecting its Pod
// by session label: no ingress ever, and no egress in mode none. Mode open
// allows all egress; mode allowlist allows TCP to its egress proxy Pod's
// port alone (no DNS: the proxy resolves). It is enforced only where the
// cluster's network plugin implements NetworkPolicy.
func BuildNetworkPolicy(pod *corev1.Pod, mode egress.Mode) *networkingv1.NetworkPolicy {
	types := []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress}
	np := &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{
			Name:   pod.Name,
			Labels: map[string]string{launchplan.LabelManaged: "true", launchplan.LabelSession: pod.Labels[launchplan.LabelSession]},
		},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{
				launchplan.LabelManaged: "true",
				launchplan.LabelSession: pod.Labels[launchplan.LabelSession],
			}},
			PolicyTypes: types,
		},
	}
	switch mode {
	case egress.ModeOpen, "":
		np.Spec.Egress = []networkingv1.NetworkPolicyEgressRule{{}}
	case egress.ModeAllowlist:
		np.Spec.Egress = allowlistEgress(pod.Name)
	}
	return np
}

// toleration maps one kubernetes.tolerations entry: key=value:Effect
// tolerates that value (operator Equal), key:Effect any value (Exists).
func toleration(t config.Toleration) corev1.Toleration {
	out := corev1.Toleration{Key: t.Key, Operator: corev1.TolerationOpEqual, Value: t.Value, Effect: corev1.TaintEffect(t.Effect)}
	if t.Exists {
		out.Operator, out.Value = corev1.TolerationOpExists, ""
	}
	return out
}

// ptr returns a pointer to v.
func ptr[T any](v T) *T { return &v }

// cleanPath reports whether p is an absolute, clean container path.
func cleanPath(p string) bool { return path.IsAbs(p) && path.Clean(p) == p }
