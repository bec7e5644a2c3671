//go:build kubernetes

package podbot

import (
	"strings"
	"testing"

	"github.com/podbot/podbot/config"
	"github.com/podbot/podbot/egress"
	"github.com/podbot/podbot/kube"
)

// TestKubeTrustPathsAreTheEngines: the cluster's sandbox sees its trust
// files where the engine's does, so VaultTrustEnv fits both.
func TestKubeTrustPathsAreTheEngines(t *testing.T) {
	if kube.TrustDir != VaultTrustDir || kube.SystemCABundle != SystemCABundle {
		t.Errorf("kube %s %s, engine %s %s", kube.TrustDir, kube.SystemCABundle, VaultTrustDir, SystemCABundle)
	}
}

// TestKubeEgressVault: the cluster's form of a vault is the secrets file
// the proxy parses, with the CA's certificate and key, and carryVault
// keeps it for the launch.
func TestKubeEgressVault(t *testing.T) {
	v, err := newVault("podbot-x", []config.Secret{{Name: "api", Source: "env:API_KEY", Hosts: []string{"api.example.com"},
		Header: "x-api-key: {}", Env: "API_KEY"}}, []string{"API_KEY=real-value-123"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var b kubeBackend
	if err := b.carryVault(v); err != nil {
		t.Fatal(err)
	}
	ss, err := egress.ParseSecrets(b.vault.Secrets)
	if err != nil || len(ss) != 1 || ss[0].Value != "real-value-123" || ss[0].Placeholder != v.placeholder("api") {
		t.Fatalf("secrets %+v %v", ss, err)
	}
	if string(b.vault.CACert) != string(v.ca.CertPEM()) || !strings.Contains(string(b.vault.CAKey), "PRIVATE KEY") {
		t.Error("CA certificate or key missing")
	}
	if strings.Contains(string(b.vault.CACert), "PRIVATE KEY") {
		t.Error("the certificate, which reaches the sandbox, holds a key")
	}
}
