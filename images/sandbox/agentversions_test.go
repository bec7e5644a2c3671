package sandboximage

import (
	"reflect"
	"strings"
	"testing"
)

func TestAgentVersionsRoundTrip(t *testing.T) {
	in := []AgentVersion{{"opencode", "1.18.33"}, {"claude", "2.1.330"}, {"goose", "1.9.0+local"}}
	label := FormatAgentVersions(in)
	if label != "claude=2.1.330,goose=1.9.0+local,opencode=1.18.33" {
		t.Fatalf("label %q", label)
	}
	got := ParseAgentVersions(label)
	want := []AgentVersion{{"claude", "2.1.330"}, {"goose", "1.9.0+local"}, {"opencode", "1.18.33"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("parsed %v, want %v", got, want)
	}
}

// TestParseAgentVersionsDropsHostile: an image's label is not trusted;
// terminal escapes, odd names, repeats and oversized labels are dropped.
func TestParseAgentVersionsDropsHostile(t *testing.T) {
	for _, label := range []string{
		"",
		"claude",
		"claude=",
		"=1.0",
		"claude=1.0\x1b[31m",
		"Claude=1.0",
		"claude=1.0 beta",
		"../x=1.0",
		strings.Repeat("a", 40) + "=1.0",
		"claude=" + strings.Repeat("1", 65),
	} {
		if got := ParseAgentVersions(label); len(got) != 0 {
			t.Errorf("ParseAgentVersions(%q) = %v, want nothing", label, got)
		}
	}
	if got := ParseAgentVersions("codex=1,codex=2"); len(got) != 1 || got[0].Version != "1" {
		t.Errorf("repeated name: %v", got)
	}
	long := "codex=1," + strings.Repeat("x", maxAgentVersionsLabel) + ",gemini=2"
	if got := ParseAgentVersions(long); len(got) != 1 {
		t.Errorf("entries past the size bound were read: %v", got)
	}
}

func FuzzParseAgentVersions(f *testing.F) {
	for _, s := range []string{"claude=2.1.330,codex=0.169.0", "a=b=c", ",,,", "x=\x00", "goose=1.0+local"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, label string) {
		got := ParseAgentVersions(label)
		seen := map[string]bool{}
		for _, a := range got {
			if !agentNameRE.MatchString(a.Name) || !ValidAgentVersion(a.Version) || seen[a.Name] {
				t.Fatalf("bad entry %+v from %q", a, label)
			}
			seen[a.Name] = true
		}
		if again := ParseAgentVersions(FormatAgentVersions(got)); !reflect.DeepEqual(again, got) && len(got) > 0 {
			t.Fatalf("round trip changed %v to %v", got, again)
		}
	})
}
