package kube

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/podbot/podbot/egress"
	"github.com/podbot/podbot/egressnet"
	"github.com/podbot/podbot/errdefs"
	"github.com/podbot/podbot/launchplan"
)

// Recognisable stand-ins for what must stay in the vault Secret.
const (
	testSecretValue = "sk-real-value-0123456789"
	testCAKey       = "-----BEGIN EC PRIVATE KEY-----\nkey-material\n-----END EC PRIVATE KEY-----\n"
	testCACert      = "-----BEGIN CERTIFICATE-----\ncert-material\n-----END CERTIFICATE-----\n"
)

// testVault is a vault holding one secret with testSecretValue.
func testVault(t *testing.T) *EgressVault {
	t.Helper()
	r, err := egress.ParseRule("api.example.com")
	if err != nil {
		t.Fatal(err)
	}
	ph, err := egress.NewPlaceholder("api")
	if err != nil {
		t.Fatal(err)
	}
	data, err := egress.MarshalSecrets([]egress.Secret{{Name: "api", Hosts: []egress.Rule{r}, Header: "Authorization: Bearer {}",
		Value: testSecretValue, Placeholder: ph}})
	if err != nil {
		t.Fatal(err)
	}
	return &EgressVault{Secrets: data, CACert: []byte(testCACert), CAKey: []byte(testCAKey)}
}

// assertNoVaultMaterial fails when obj, as JSON, holds the secret's value
// or the CA's key.
func assertNoVaultMaterial(t *testing.T, what string, obj any) {
	t.Helper()
	data, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{testSecretValue, "key-material"} {
		if strings.Contains(string(data), s) {
			t.Errorf("%s holds vault material %q", what, s)
		}
	}
}

func TestBuildVaultSecret(t *testing.T) {
	v := testVault(t)
	s, err := BuildVaultSecret("podbot-a", *v)
	if err != nil {
		t.Fatal(err)
	}
	if s.Name != EgressName("podbot-a") || s.Labels[egressnet.LabelSandbox] != "podbot-a" || s.Labels[egressnet.LabelRole] != egressnet.RoleProxy {
		t.Errorf("meta %+v", s.ObjectMeta)
	}
	if _, ok := s.Labels[launchplan.LabelManaged]; ok {
		t.Errorf("the vault Secret must not look like a sandbox's: %v", s.Labels)
	}
	if s.Type != corev1.SecretTypeOpaque || s.Immutable == nil || !*s.Immutable {
		t.Errorf("type %q immutable %v", s.Type, s.Immutable)
	}
	if len(s.Data) != 3 || string(s.Data[egressnet.SecretsFile]) != string(v.Secrets) ||
		string(s.Data[egressnet.CACertFile]) != testCACert || string(s.Data[egressnet.CAKeyFile]) != testCAKey {
		t.Errorf("data keys %v", slices.Sorted(mapsKeys(s.Data)))
	}
	if _, err := egress.ParseSecrets(s.Data[egressnet.SecretsFile]); err != nil {
		t.Errorf("the secrets key is not a file the proxy reads: %v", err)
	}
	if len(s.Annotations) != 0 || len(s.StringData) != 0 {
		t.Errorf("annotations %v stringData %v", s.Annotations, s.StringData)
	}
	for name, bad := range map[string]EgressVault{
		"no secrets": {CACert: v.CACert, CAKey: v.CAKey},
		"no key":     {Secrets: v.Secrets, CACert: v.CACert},
		"too large":  {Secrets: v.Secrets, CACert: v.CACert, CAKey: make([]byte, MaxSecretBytes)},
	} {
		var ce *errdefs.ConfigError
		if _, err := BuildVaultSecret("podbot-a", bad); !errors.As(err, &ce) || ce.Key != "secrets" {
			t.Errorf("%s: %v, want a config error naming secrets", name, err)
		}
	}
}

func mapsKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// TestVaultOnlyInProxyPod checks that the Secret is mounted in the proxy
// Pod alone, read-only, in its copying init container alone, and that the
// proxy reads the copy from a read-only memory volume.
func TestVaultOnlyInProxyPod(t *testing.T) {
	plan := allowlistPlan(t)
	proxy, err := BuildEgressPod(plan.Name, plan.Image, false, true, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var secretVols []string
	for _, v := range proxy.Spec.Volumes {
		if v.Secret != nil {
			secretVols = append(secretVols, v.Name)
			if v.Secret.SecretName != EgressName(plan.Name) || *v.Secret.DefaultMode != 0o440 {
				t.Errorf("secret volume %+v", v.Secret)
			}
		}
		if v.Name == vaultVolume && (v.EmptyDir == nil || v.EmptyDir.Medium != corev1.StorageMediumMemory || v.EmptyDir.SizeLimit == nil) {
			t.Errorf("vault volume %+v: want a bounded memory emptyDir", v.VolumeSource)
		}
	}
	if !slices.Equal(secretVols, []string{vaultSecretVolume}) {
		t.Fatalf("secret volumes %v", secretVols)
	}
	if g := proxy.Spec.SecurityContext.FSGroup; g == nil || *g != egressnet.ProxyUser {
		t.Errorf("fsGroup %v, want the proxy's group", g)
	}
	if len(proxy.Spec.InitContainers) != 2 || proxy.Spec.InitContainers[0].Name != VaultContainerName || proxy.Spec.InitContainers[1].Name != InstallContainerName {
		t.Fatalf("init containers %v", containerNames(proxy.Spec.InitContainers))
	}
	for _, c := range slices.Concat(proxy.Spec.InitContainers, proxy.Spec.Containers) {
		for _, m := range c.VolumeMounts {
			if m.Name == vaultSecretVolume && (c.Name != VaultContainerName || !m.ReadOnly) {
				t.Errorf("container %s mounts the vault Secret (read-only %v)", c.Name, m.ReadOnly)
			}
			if m.Name == vaultVolume && c.Name == EgressContainerName && (!m.ReadOnly || m.MountPath != egressnet.VaultDirTarget) {
				t.Errorf("the proxy mounts its vault copy %+v: want read-only at %s", m, egressnet.VaultDirTarget)
			}
		}
		if c.Name == VaultContainerName {
			sc := c.SecurityContext
			if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem || len(sc.Capabilities.Drop) != 1 || len(sc.Capabilities.Add) != 0 ||
				*sc.AllowPrivilegeEscalation || !*sc.RunAsNonRoot {
				t.Errorf("vault init container security %+v", sc)
			}
		}
		for _, e := range c.Env {
			if e.ValueFrom != nil {
				t.Errorf("container %s: env %s from a reference", c.Name, e.Name)
			}
		}
		if len(c.EnvFrom) != 0 {
			t.Errorf("container %s has envFrom", c.Name)
		}
	}
	cmd := proxy.Spec.Containers[0].Command
	want := []string{"--secrets", egressnet.VaultDirTarget + "/" + egressnet.SecretsFile,
		"--ca-cert", egressnet.VaultDirTarget + "/" + egressnet.CACertFile, "--ca-key", egressnet.VaultDirTarget + "/" + egressnet.CAKeyFile}
	if !slices.Equal(cmd[len(cmd)-len(want):], want) {
		t.Errorf("proxy command %v", cmd)
	}
	if !strings.Contains(vaultCopyScript, "umask 077") {
		t.Error("the copy must make files only their owner reads (the proxy refuses others)")
	}
	plain, err := BuildEgressPod(plan.Name, plan.Image, false, false, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range plain.Spec.Volumes {
		if v.Secret != nil {
			t.Errorf("a proxy without a vault mounts Secret %s", v.Secret.SecretName)
		}
	}
	if slices.Contains(plain.Spec.Containers[0].Command, "--secrets") {
		t.Error("a proxy without a vault is started with --secrets")
	}
}

func containerNames(cs []corev1.Container) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Name)
	}
	return out
}

// TestVaultTrustInSandboxPod checks the sandbox's side: the CA certificate
// alone from the ConfigMap, in an init container, the trust directory
// read-only in the sandbox container, and no Secret of the proxy's.
func TestVaultTrustInSandboxPod(t *testing.T) {
	plan := allowlistPlan(t)
	pod, err := BuildPod(plan, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := WithVaultTrust(plan.Name)(pod); err != nil {
		t.Fatal(err)
	}
	for _, v := range pod.Spec.Volumes {
		if v.Secret != nil {
			t.Errorf("the sandbox mounts Secret %s", v.Secret.SecretName)
		}
		if cm := v.ConfigMap; cm != nil {
			if cm.Name != EgressName(plan.Name) || len(cm.Items) != 1 || cm.Items[0].Key != vaultCAKey || cm.Items[0].Path != egressnet.TrustCAFile {
				t.Errorf("config map volume %+v: want the CA certificate's key alone", cm)
			}
		}
	}
	if len(pod.Spec.InitContainers) != 1 || pod.Spec.InitContainers[0].Name != TrustContainerName {
		t.Fatalf("init containers %v", containerNames(pod.Spec.InitContainers))
	}
	init := pod.Spec.InitContainers[0]
	if init.Image != plan.Image || !*init.SecurityContext.ReadOnlyRootFilesystem || *init.SecurityContext.RunAsNonRoot != *pod.Spec.Containers[0].SecurityContext.RunAsNonRoot {
		t.Errorf("trust init container %+v", init)
	}
	script := init.Command[len(init.Command)-1]
	for _, s := range []string{SystemCABundle, `d="` + TrustDir + `"`, egressnet.TrustBundleFile, "-gt 4194304"} {
		if !strings.Contains(script, s) {
			t.Errorf("trust script lacks %q:\n%s", s, script)
		}
	}
	var seen bool
	for _, m := range pod.Spec.Containers[0].VolumeMounts {
		if m.MountPath == TrustDir {
			seen = true
			if !m.ReadOnly || m.Name != trustVolume {
				t.Errorf("trust mount %+v: want read-only", m)
			}
		}
	}
	if !seen {
		t.Errorf("no mount at %s", TrustDir)
	}
}

// TestNothingSecretInSpecs checks every object a vault launch makes
// except the vault Secret: the ConfigMap holds the certificate, and no
// value or key is in it or in either Pod's spec.
func TestNothingSecretInSpecs(t *testing.T) {
	plan := allowlistPlan(t)
	v := testVault(t)
	cm, err := BuildEgressConfigMap(plan.Name, &plan.Egress.Policy, nil, v.CACert)
	if err != nil {
		t.Fatal(err)
	}
	if cm.Data[vaultCAKey] != testCACert {
		t.Errorf("config map %v lacks the CA certificate", cm.Data)
	}
	assertNoVaultMaterial(t, "config map", cm)
	proxy, err := BuildEgressPod(plan.Name, plan.Image, false, true, Options{})
	if err != nil {
		t.Fatal(err)
	}
	assertNoVaultMaterial(t, "proxy pod", proxy)
	pod, err := BuildPod(plan, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := WithVaultTrust(plan.Name)(pod); err != nil {
		t.Fatal(err)
	}
	withEgressProxy(pod, "10.0.0.9")
	assertNoVaultMaterial(t, "sandbox pod", pod)
	assertNoVaultMaterial(t, "policy", BuildEgressNetworkPolicy(plan.Name, "s"))
}

// TestLaunchVaultFailureLeavesNothing starts a vault launch whose proxy
// cannot get its sidecar (the fake has no exec) and finds every object,
// the vault Secret included, deleted; and one without a sidecar at all.
func TestLaunchVaultFailureLeavesNothing(t *testing.T) {
	plan := allowlistPlan(t)
	for name, c := range map[string]func(*fake.Clientset) *Client{
		"no sidecar": func(cs *fake.Clientset) *Client { return NewForClientset(cs, "sb", Options{}) },
		"sidecar cannot be streamed": func(cs *fake.Clientset) *Client {
			initReactor(cs, corev1.ContainerState{Running: &corev1.ContainerStateRunning{}})
			return NewForClientset(cs, "sb", Options{StartTimeout: 300 * time.Millisecond}).WithSidecar(&Sidecar{data: []byte("x")})
		},
	} {
		t.Run(name, func(t *testing.T) {
			cs := fake.NewClientset()
			if _, err := c(cs).Launch(context.Background(), plan, LaunchOptions{Vault: testVault(t)}); err == nil {
				t.Fatal("launch succeeded")
			}
			assertNoEgress(t, cs)
			if s, _ := cs.CoreV1().Secrets("sb").List(context.Background(), metav1.ListOptions{}); len(s.Items) != 0 {
				t.Errorf("left behind: %d secrets", len(s.Items))
			}
		})
	}
	t.Run("not allowlist", func(t *testing.T) {
		cs := fake.NewClientset()
		p := testPlan(t, func(req *launchplan.Request) { req.Egress = launchplan.Egress{Mode: egress.ModeOpen} })
		_, err := NewForClientset(cs, "sb", Options{}).Launch(context.Background(), p, LaunchOptions{Vault: testVault(t)})
		if !errors.Is(err, errdefs.ErrConflict) {
			t.Fatalf("err %v, want a conflict", err)
		}
		assertNothingLeft(t, cs)
	})
}

func TestOwnAndDeleteVaultSecret(t *testing.T) {
	ctx := context.Background()
	cs := fake.NewClientset()
	c := NewForClientset(cs, "sb", Options{})
	seedEgress(t, cs, "podbot-a", "podbot-a")
	s, err := BuildVaultSecret("podbot-a", *testVault(t))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Secrets("sb").Create(ctx, s, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Someone else's Secret under the name a second sandbox's would have.
	foreign := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: EgressName("podbot-b"), Labels: map[string]string{"app": "x"}}}
	if _, err := cs.CoreV1().Secrets("sb").Create(ctx, foreign, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	owner := metav1.OwnerReference{APIVersion: "v1", Kind: "Pod", Name: "podbot-a", UID: "uid-a"}
	if err := c.ownEgress(ctx, "podbot-a", owner, true); err != nil {
		t.Fatal(err)
	}
	got, _ := cs.CoreV1().Secrets("sb").Get(ctx, EgressName("podbot-a"), metav1.GetOptions{})
	if len(got.OwnerReferences) != 1 || got.OwnerReferences[0].UID != "uid-a" {
		t.Errorf("vault secret owners %+v", got.OwnerReferences)
	}
	if err := c.deleteEgress(ctx, "podbot-a"); err != nil {
		t.Fatal(err)
	}
	if err := c.deleteEgress(ctx, "podbot-b"); err != nil {
		t.Fatal(err)
	}
	l, _ := cs.CoreV1().Secrets("sb").List(ctx, metav1.ListOptions{})
	if len(l.Items) != 1 || l.Items[0].Name != EgressName("podbot-b") {
		t.Errorf("secrets left %v: want only the foreign one", l.Items)
	}
}

func TestPruneVaultSecret(t *testing.T) {
	vault := func(sandbox string, age time.Duration) []runtime.Object {
		return []runtime.Object{&corev1.Secret{ObjectMeta: meta(EgressName(sandbox), age, egressLabels(sandbox))}}
	}
	c, cs := pruneClient(
		vault("gone", ages),      // its sandbox and the rest of its proxy are gone
		vault("running", ages),   // its sandbox runs
		vault("starting", young), // made before its proxy Pod
		sandboxPod("running", aged, corev1.PodRunning),
	)
	res := prune(t, c, false)
	if !slices.Equal(res.Egress, []string{"gone"}) {
		t.Fatalf("pruned egress %v, want [gone]", res.Egress)
	}
	if exists(t, cs, "secret", EgressName("gone")) || !exists(t, cs, "secret", EgressName("running")) || !exists(t, cs, "secret", EgressName("starting")) {
		t.Error("wrong vault secrets pruned")
	}
}

// runScript runs script with /bin/sh after moving its constant paths
// (old, new pairs) under a temporary directory.
func runScript(t *testing.T, script string, paths ...string) {
	t.Helper()
	script = strings.NewReplacer(paths...).Replace(script)
	if out, err := exec.Command("/bin/sh", "-c", script).CombinedOutput(); err != nil {
		t.Fatalf("script: %v: %s", err, out)
	}
}

func TestVaultCopyScript(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	v := testVault(t)
	files := map[string][]byte{egressnet.SecretsFile: v.Secrets, egressnet.CACertFile: v.CACert, egressnet.CAKeyFile: v.CAKey}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(src, name), data, 0o440); err != nil {
			t.Fatal(err)
		}
	}
	runScript(t, vaultCopyScript, vaultSecretMount, src, egressnet.VaultDirTarget, dst)
	for name, data := range files {
		p := filepath.Join(dst, name)
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := os.ReadFile(p)
		if st.Mode().Perm() != 0o600 || string(got) != string(data) {
			t.Errorf("%s: mode %04o, same content %v", name, st.Mode().Perm(), string(got) == string(data))
		}
	}
	// The proxy's own reader accepts the copy.
	if _, err := egress.ReadSecretsFile(filepath.Join(dst, egressnet.SecretsFile)); err != nil {
		t.Error(err)
	}
	if left, _ := filepath.Glob(filepath.Join(dst, "*.part")); len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

func TestTrustScript(t *testing.T) {
	script := fmt.Sprintf(trustScript, MaxSystemBundleBytes, MaxSystemBundleBytes)
	for name, tc := range map[string]struct {
		system *string
		want   string
	}{
		"image bundle ending in a newline": {ptr("SYSTEM\n"), "SYSTEM\n" + testCACert},
		"image bundle without one":         {ptr("SYSTEM"), "SYSTEM\n" + testCACert},
		"no image bundle":                  {nil, testCACert},
	} {
		t.Run(name, func(t *testing.T) {
			src, dst, sys := t.TempDir(), t.TempDir(), t.TempDir()
			if err := os.WriteFile(filepath.Join(src, egressnet.TrustCAFile), []byte(testCACert), 0o444); err != nil {
				t.Fatal(err)
			}
			bundle := filepath.Join(sys, "ca-certificates.crt")
			if tc.system != nil {
				if err := os.WriteFile(bundle, []byte(*tc.system), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			runScript(t, script, trustSrcMount, src, `d="`+TrustDir+`"`, `d="`+dst+`"`, SystemCABundle, bundle)
			got, _ := os.ReadFile(filepath.Join(dst, egressnet.TrustBundleFile))
			ca, _ := os.ReadFile(filepath.Join(dst, egressnet.TrustCAFile))
			if string(got) != tc.want || string(ca) != testCACert {
				t.Errorf("bundle %q ca %q", got, ca)
			}
			if st, err := os.Stat(filepath.Join(dst, egressnet.TrustBundleFile)); err != nil || st.Mode().Perm() != 0o444 {
				t.Errorf("bundle mode: %v %v", st, err)
			}
		})
	}
}
