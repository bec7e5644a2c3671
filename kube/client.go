package kube

import (
	"fmt"
	"path/filepath"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/podbot/podbot/config"
	"github.com/podbot/podbot/errdefs"
)

// Client-side request limits: a ceiling against a runaway loop, well
// above what one podbot process needs.
const (
	clientQPS   = 500
	clientBurst = 1000
)

// DefaultStartTimeout bounds how long Create waits for a Pod to run.
const DefaultStartTimeout = 2 * time.Minute

// Options configure the backend ([kubernetes] in the configuration).
type Options struct {
	// Kubeconfig is the kubeconfig file; empty follows client-go's
	// loading rules ($KUBECONFIG, ~/.kube/config, in-cluster).
	Kubeconfig string
	// KubeconfigEnv is $KUBECONFIG as the caller sees it (a list of
	// files); empty reads the process environment.
	KubeconfigEnv string
	// Context is the kubeconfig context; empty is the current one.
	Context string
	// Namespace is where Pods go; empty is the context's namespace.
	Namespace string
	// RuntimeClass is the Pods' RuntimeClass; empty is the default.
	RuntimeClass string
	// NodeSelector are node labels the Pods must land on.
	NodeSelector map[string]string
	// ImagePullPolicy is Always, IfNotPresent or Never; empty is the
	// cluster's default.
	ImagePullPolicy string
	// ServiceAccount is the Pods' service account; its token is never
	// mounted.
	ServiceAccount string
	// StartTimeout bounds the wait for a new Pod to run; zero is
	// DefaultStartTimeout.
	StartTimeout time.Duration
	// Tolerations are taints the Pods tolerate (kubernetes.tolerations),
	// parsed by config.ParseToleration.
	Tolerations []config.Toleration
}

// Client is a connection to one cluster and namespace.
type Client struct {
	cs        kubernetes.Interface
	config    *rest.Config // nil with a fake clientset: exec needs a real one
	namespace string
	opts      Options
	// sidecar runs allowlist sandboxes' egress proxies (WithSidecar).
	sidecar *Sidecar
}

// Connect loads the kubeconfig the standard way and returns a client for
// opts.Namespace (or the context's). It does no network I/O: an
// unreachable server shows on the first call.
func Connect(opts Options) (*Client, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if opts.KubeconfigEnv != "" {
		rules.Precedence = filepath.SplitList(opts.KubeconfigEnv)
	}
	if opts.Kubeconfig != "" {
		rules.ExplicitPath = opts.Kubeconfig
	}
	overrides := &clientcmd.ConfigOverrides{CurrentContext: opts.Context}
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides)
	cfg, err := cc.ClientConfig()
	if err != nil {
		return nil, kubeconfigError(opts, err)
	}
	ns := opts.Namespace
	if ns == "" {
		if ns, _, err = cc.Namespace(); err != nil || ns == "" {
			ns = "default"
		}
	}
	cfg.UserAgent = "podbot"
	// client-go's default of 5 requests a second (burst 10) throttles a
	// refiller or a claim loop in the client (kubectl's 50 a second still
	// added 20 ms to each call of a busy process); the limit here only
	// stops a runaway loop and leaves the server's own priority and
	// fairness in charge. Protobuf is cheaper to decode than JSON for the
	// Pod lists a pool claim reads.
	cfg.QPS, cfg.Burst = clientQPS, clientBurst
	cfg.ContentType = "application/vnd.kubernetes.protobuf"
	cfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, kubeconfigError(opts, err)
	}
	return &Client{cs: cs, config: cfg, namespace: ns, opts: opts}, nil
}

// NewForClientset wraps an existing clientset (a fake one in tests). Exec
// needs a REST config and is refused on such a client.
func NewForClientset(cs kubernetes.Interface, namespace string, opts Options) *Client {
	if namespace == "" {
		namespace = "default"
	}
	return &Client{cs: cs, namespace: namespace, opts: opts}
}

// Namespace is the namespace the client's sandboxes live in.
func (c *Client) Namespace() string { return c.namespace }

// Server is the API server's address, for messages ("" with a fake clientset).
func (c *Client) Server() string {
	if c.config == nil {
		return ""
	}
	return c.config.Host
}

// kubeconfigError explains a kubeconfig that cannot be used.
func kubeconfigError(opts Options, err error) error {
	where := "client-go's default locations ($KUBECONFIG, ~/.kube/config, in-cluster)"
	if opts.Kubeconfig != "" {
		where = opts.Kubeconfig
	}
	if clientcmd.IsEmptyConfig(err) {
		return &errdefs.ConfigError{Key: "kubernetes.kubeconfig", Reason: errdefs.ErrMissingRequired,
			Msg: fmt.Sprintf("no kubeconfig found in %s, and podbot does not run in a cluster; set kubernetes.kubeconfig or KUBECONFIG", where)}
	}
	key := "kubernetes.kubeconfig"
	if opts.Context != "" && clientcmd.IsContextNotFound(err) {
		key = "kubernetes.context"
	}
	return &errdefs.ConfigError{Key: key, Reason: errdefs.ErrInvalidValue,
		Msg: fmt.Sprintf("kubeconfig from %s cannot be used: %s", where, bounded(err.Error()))}
}
