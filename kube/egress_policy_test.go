package kube

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/podbot/podbot/egress"
	"github.com/podbot/podbot/errdefs"
)

// allowlistSandbox makes an allowlist sandbox's Pod and proxy ConfigMap in
// a fake clientset.
func allowlistSandbox(t *testing.T) (*Client, *fake.Clientset, string) {
	t.Helper()
	ctx := context.Background()
	cs := fake.NewClientset()
	plan := allowlistPlan(t)
	pod, err := BuildPod(plan, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Pods("sb").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cm, err := BuildEgressConfigMap(plan.Name, &plan.Egress.Policy, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().ConfigMaps("sb").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return NewForClientset(cs, "sb", Options{}), cs, plan.Name
}

func TestChangeEgressPolicy(t *testing.T) {
	ctx := context.Background()
	c, cs, name := allowlistSandbox(t)
	ep, err := c.EgressPolicy(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	if ep.Name != EgressName(name) || len(ep.Policy.Rules) != 1 || ep.Policy.Rules[0].Host != "example.com" {
		t.Fatalf("policy %+v", ep)
	}
	r, _ := egress.ParseRule("new.example:8443")
	if _, err := c.ChangeEgressPolicy(ctx, name, func(p *egress.Policy) { p.Rules = append(p.Rules, r) }); err != nil {
		t.Fatal(err)
	}
	cm, _ := cs.CoreV1().ConfigMaps("sb").Get(ctx, EgressName(name), metav1.GetOptions{})
	pol, err := egress.ParsePolicy([]byte(cm.Data["policy.json"]))
	if err != nil {
		t.Fatal(err)
	}
	if d := pol.Decide("new.example", 8443); !d.Allowed {
		t.Errorf("the written policy does not allow the new rule: %s", cm.Data["policy.json"])
	}
}

func TestEgressPolicyRefusals(t *testing.T) {
	ctx := context.Background()
	c, cs, name := allowlistSandbox(t)
	// A sandbox without a proxy (mode none or open).
	cm, _ := cs.CoreV1().ConfigMaps("sb").Get(ctx, EgressName(name), metav1.GetOptions{})
	if err := cs.CoreV1().ConfigMaps("sb").Delete(ctx, cm.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.EgressPolicy(ctx, name); !errors.Is(err, errdefs.ErrInvalidValue) || !strings.Contains(err.Error(), "not in allowlist mode") {
		t.Errorf("no proxy: %v", err)
	}
	// A same-named ConfigMap that is not the sandbox's proxy's is not used.
	cm.ResourceVersion = ""
	cm.Labels = map[string]string{"app": "other"}
	if _, err := cs.CoreV1().ConfigMaps("sb").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ChangeEgressPolicy(ctx, name, func(*egress.Policy) {}); !errors.Is(err, errdefs.ErrInvalidValue) {
		t.Errorf("foreign config map: %v", err)
	}
	// No such sandbox.
	if _, err := c.EgressPolicy(ctx, "podbot-missing"); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("missing sandbox: %v", err)
	}
}

func TestEgressPolicyBadConfigMap(t *testing.T) {
	ctx := context.Background()
	c, cs, name := allowlistSandbox(t)
	cm, _ := cs.CoreV1().ConfigMaps("sb").Get(ctx, EgressName(name), metav1.GetOptions{})
	cm.Data["policy.json"] = `{"version": 99}`
	if _, err := cs.CoreV1().ConfigMaps("sb").Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.EgressPolicy(ctx, name); !errors.Is(err, errdefs.ErrInvalidValue) {
		t.Errorf("bad policy: %v", err)
	}
}

func TestSplitLines(t *testing.T) {
	long := strings.Repeat("x", maxLogLine+10)
	in := "a\n\n" + long + "\nb\npartial"
	var got []string
	if err := splitLines(strings.NewReader(in), func(l []byte) error { got = append(got, string(l)); return nil }); err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, ",") != "a,b" {
		t.Errorf("lines %q: want a and b (empty, over-long and unterminated lines skipped)", got)
	}
	stop := errors.New("stop")
	if err := splitLines(bytes.NewReader([]byte("a\nb\n")), func([]byte) error { return stop }); !errors.Is(err, stop) {
		t.Errorf("fn's error: %v", err)
	}
}
