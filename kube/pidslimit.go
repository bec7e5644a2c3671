package kube

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/podbot/podbot/errdefs"
)

// Bounds of a process-limit read.
const (
	// maxConfigzBytes bounds a kubelet's /configz answer (a few KiB).
	maxConfigzBytes = 1 << 20
	// maxPidsNodes bounds how many nodes PodPidsLimits reads.
	maxPidsNodes = 16
)

// NodePidsLimit is one node's per-Pod process limit: the kubelet's
// podPidsLimit (KubeletConfiguration), which caps every Pod's pids cgroup
// on that node. Kubernetes has no per-Pod field for it, so a launch plan's
// pids limit is not applied on a cluster; this is what holds a fork bomb.
type NodePidsLimit struct {
	// Node is the node's name.
	Node string
	// Limit is podPidsLimit; 0 or less means none (the kubelet's default
	// is -1). Valid only when Err is nil.
	Limit int64
	// Err is why the limit could not be read (commonly RBAC: reading a
	// kubelet's configuration needs get on nodes/proxy).
	Err error
}

// Limited reports whether the node caps each Pod's processes.
func (n NodePidsLimit) Limited() bool { return n.Err == nil && n.Limit > 0 }

// PodPidsLimits reads podPidsLimit from the running kubelets of the nodes
// sandboxes may land on (kubernetes.node_selector; at most 16), through the
// API server's node proxy (GET /api/v1/nodes/NAME/proxy/configz). Listing
// nodes needs list on nodes, and each read get on nodes/proxy: rights a
// namespaced Role does not give. A refused list is the error (class
// errdefs.ErrPermissionDenied); a refused or failed read is that node's
// Err, so the caller can degrade to "unknown".
func (c *Client) PodPidsLimits(ctx context.Context) ([]NodePidsLimit, error) {
	if c.config == nil {
		return nil, &errdefs.ContainerError{Op: "kubernetes read node configuration", Reason: errdefs.ErrUnsupported,
			Msg: "the client has no REST configuration (a fake clientset)"}
	}
	lctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	nodes, err := c.cs.CoreV1().Nodes().List(lctx, metav1.ListOptions{
		LabelSelector: labels.SelectorFromSet(c.opts.NodeSelector).String(), Limit: maxPidsNodes})
	if err != nil {
		return nil, nodeReadError(c.classify("list nodes", "", err))
	}
	out := make([]NodePidsLimit, 0, len(nodes.Items))
	for i := range nodes.Items {
		if i == maxPidsNodes {
			break
		}
		name := nodes.Items[i].Name
		limit, err := c.nodePidsLimit(ctx, name)
		out = append(out, NodePidsLimit{Node: name, Limit: limit, Err: err})
	}
	return out, nil
}

// nodePidsLimit reads one kubelet's podPidsLimit from its /configz.
func (c *Client) nodePidsLimit(ctx context.Context, node string) (int64, error) {
	rctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	rc, err := c.cs.CoreV1().RESTClient().Get().AbsPath("/api/v1/nodes", node, "proxy", "configz").Stream(rctx)
	if err != nil {
		return 0, nodeReadError(c.classify("read node configuration", node, err))
	}
	defer rc.Close()
	body, err := io.ReadAll(io.LimitReader(rc, maxConfigzBytes+1))
	if err != nil {
		return 0, c.classify("read node configuration", node, err)
	}
	if len(body) > maxConfigzBytes {
		return 0, &errdefs.ContainerError{Op: "kubernetes read node configuration", Container: node, Reason: errdefs.ErrInvalidValue,
			Msg: fmt.Sprintf("the kubelet's /configz is larger than %d bytes", maxConfigzBytes)}
	}
	limit, err := ParseConfigzPidsLimit(body)
	if err != nil {
		return 0, &errdefs.ContainerError{Op: "kubernetes read node configuration", Container: node, Reason: errdefs.ErrInvalidValue,
			Msg: "the kubelet's /configz cannot be read", Err: err}
	}
	return limit, nil
}

// nodePidsRBAC is the grant that lets podbot read the kubelets' limits.
const nodePidsRBAC = "a ClusterRole with list on nodes and get on nodes/proxy lets podbot read the kubelets' podPidsLimit"

// nodeReadError replaces the namespaced Role hint of a refusal with the
// cluster-wide grant node reads need.
func nodeReadError(err error) error {
	var ce *errdefs.ContainerError
	if errors.As(err, &ce) && errors.Is(ce.Reason, errdefs.ErrPermissionDenied) {
		ce.Hint = nodePidsRBAC
	}
	return err
}

// errNoKubeletConfig is a /configz answer without a kubelet's section.
var errNoKubeletConfig = errors.New("no kubeletconfig object in the answer")

// ParseConfigzPidsLimit returns podPidsLimit from a kubelet's /configz
// answer ({"kubeletconfig": {...KubeletConfiguration v1beta1...}}); an
// absent field is the kubelet's default, -1 (no limit).
func ParseConfigzPidsLimit(body []byte) (int64, error) {
	var doc struct {
		Kubelet *struct {
			PodPidsLimit *int64 `json:"podPidsLimit"`
		} `json:"kubeletconfig"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return 0, err
	}
	if doc.Kubelet == nil {
		return 0, errNoKubeletConfig
	}
	if doc.Kubelet.PodPidsLimit == nil {
		return -1, nil
	}
	return *doc.Kubelet.PodPidsLimit, nil
}
