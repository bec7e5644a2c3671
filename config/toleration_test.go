package config

import (
	"strings"
	"testing"
)

func TestParseToleration(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Toleration
		err  bool
	}{
		{in: "kwok.x-k8s.io/node=fake:NoSchedule", want: Toleration{Key: "kwok.x-k8s.io/node", Value: "fake", Effect: EffectNoSchedule}},
		{in: "dedicated:NoExecute", want: Toleration{Key: "dedicated", Exists: true, Effect: EffectNoExecute}},
		{in: "gpu=yes:PreferNoSchedule", want: Toleration{Key: "gpu", Value: "yes", Effect: EffectPreferNoSchedule}},
		{in: "dedicated", err: true},
		{in: "dedicated=x", err: true},
		{in: "dedicated=x:noschedule", err: true},
		{in: "dedicated=:NoSchedule", err: true},
		{in: "=x:NoSchedule", err: true},
		{in: "a b=x:NoSchedule", err: true},
		{in: "Bad_Prefix/key=x:NoSchedule", err: true},
		{in: "key=a:b:NoSchedule", err: true},
		{in: "key=" + strings.Repeat("v", 64) + ":NoSchedule", err: true},
		{in: ":NoSchedule", err: true},
	} {
		got, err := ParseToleration(tc.in)
		if tc.err {
			if err == nil {
				t.Errorf("%q: parsed as %+v, want an error", tc.in, got)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%q: got %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
		if got.String() != tc.in {
			t.Errorf("%q: String() = %q", tc.in, got.String())
		}
	}
}

func TestValidateTolerations(t *testing.T) {
	c := Default()
	c.Kubernetes.Tolerations = []string{"kwok.x-k8s.io/node=fake:NoSchedule", "oops"}
	err := c.Validate()
	if err == nil || !strings.Contains(err.Error(), "kubernetes.tolerations") || !strings.Contains(err.Error(), "oops") {
		t.Fatalf("Validate: %v; want an error naming kubernetes.tolerations and the bad entry", err)
	}
}

// FuzzParseToleration: an entry either is refused or prints back as given,
// with an effect of the three and a key that has no ':' or '='.
func FuzzParseToleration(f *testing.F) {
	for _, s := range []string{"k=v:NoSchedule", "k:NoExecute", "a.b/c=d:PreferNoSchedule", "k=v", ":", "=:", "k=v:NoSchedule:NoSchedule"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tol, err := ParseToleration(s)
		if err != nil {
			return
		}
		if tol.String() != s {
			t.Fatalf("%q printed back as %q", s, tol.String())
		}
		if strings.ContainsAny(tol.Key, ":= ") || strings.ContainsAny(tol.Value, ":= ") {
			t.Fatalf("%q: key %q value %q", s, tol.Key, tol.Value)
		}
	})
}
