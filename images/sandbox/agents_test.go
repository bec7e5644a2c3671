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
	for _, cli := range AgentCLIs() {
		want = append(want, "ARG "+cli.VersionArg, cli.Name+`) spec="`+cli.Package+"@$"+cli.VersionArg+`"`)
		if cli.Version == "" || strings.ContainsAny(cli.Version, "^~*x ") {
			t.Errorf("%s version %q is not an exact pin", cli.Name, cli.Version)
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
