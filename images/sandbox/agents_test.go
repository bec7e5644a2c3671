package sandboximage

import (
	"strings"
	"testing"
)

// TestAgentsContainerfileUsesNames keeps the agent image's constants, the
// pinned versions and its Containerfile in step.
func TestAgentsContainerfileUsesNames(t *testing.T) {
	text := string(AgentsContainerfile)
	want := []string{
		"FROM ${" + BaseArg + "}",
		"ARG " + AgentsArg,
		"COPY " + CADir + "/ ",
		"COPY " + NestedContainersConfName + " /etc/containers/containers.conf",
		"COPY " + NestedStorageConfName + " /etc/containers/storage.conf",
		"LABEL " + AgentsLabel + `="${` + AgentsArg + `}"`,
		"useradd --create-home --uid 1000 --shell /bin/bash " + AgentUser,
		"fuse-overlayfs", "slirp4netns", "uidmap",
	}
	want = append(want, "ARG "+NPMSpecsArg, "ARG "+NodeVersionArg, "COPY "+GooseDir+"/ ",
		`node-linux-$arch@$`+NodeVersionArg, "$"+NPMSpecsArg+";", "/tmp/podbot-goose/goose "+GooseBin)
	if !ValidAgentVersion(NodeVersion) {
		t.Errorf("node version %q is not an exact pin", NodeVersion)
	}
	seen := map[string]bool{GooseName: true}
	for _, cli := range AgentCLIs() {
		if seen[cli.Name] || !agentNameRE.MatchString(cli.Name) || cli.Bin == "" || len(cli.Packages) == 0 {
			t.Errorf("agent CLI %+v: repeated or malformed entry", cli)
		}
		seen[cli.Name] = true
		for _, p := range cli.Packages {
			if !ValidAgentVersion(p.Version) || strings.ContainsAny(p.Version, "^~*x ") || p.Name == "" || strings.ContainsAny(p.Name, " @") && !strings.HasPrefix(p.Name, "@") {
				t.Errorf("%s: package %+v is not an exact pin", cli.Name, p)
			}
		}
	}
	for _, w := range want {
		if !strings.Contains(text, w) {
			t.Errorf("Containerfile.agents does not contain %q", w)
		}
	}
	for _, bad := range []string{"--chmod", "--mount", "--link", "# syntax=", "<<"} {
		if strings.Contains(text, bad) {
			t.Errorf("Containerfile.agents uses %q, which the classic builder rejects", bad)
		}
	}
}

// TestNestedConfs checks the inner Podman settings nested containers need
// inside a sandbox on these hosts.
func TestNestedConfs(t *testing.T) {
	for _, tt := range []struct {
		file []byte
		want string
	}{
		{NestedContainersConf, `runtime = "runc"`},
		{NestedContainersConf, `cgroup_manager = "cgroupfs"`},
		{NestedContainersConf, "default_ulimits = []"},
		{NestedContainersConf, `netns = "host"`},
		{NestedStorageConf, `driver = "vfs"`},
	} {
		if !strings.Contains(string(tt.file), tt.want) {
			t.Errorf("nested configuration lacks %q", tt.want)
		}
	}
}
