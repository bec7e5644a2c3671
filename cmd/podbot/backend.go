package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/podbot/podbot/config"
	"github.com/podbot/podbot/errdefs"
)

// engineOnly are the commands the kubernetes backend does not serve yet;
// with sandbox.backend = "kubernetes" they are refused rather than run on
// the local engine behind the user's back.
var engineOnly = map[string]bool{
	"start": true,
}

// checkBackend refuses an engine-only command when the kubernetes backend
// is selected. The unsafe local tool backend (podbot tools --backend
// local) uses no engine and stays allowed. A configuration that does not
// load is left to the command, which reports it. The configuration is the
// one without the command's own flags (baseConfig); a command that adds
// none reuses it instead of loading again.
func (f *factory) checkBackend(cmd *cobra.Command) error {
	f.applyToolsBackend(cmd)
	top := cmd
	for top.HasParent() && top.Parent().HasParent() {
		top = top.Parent()
	}
	if !engineOnly[top.Name()] {
		return nil
	}
	loaded, err := f.baseConfig()
	if err != nil || loaded.Config.Sandbox.Backend != config.BackendKubernetes {
		return nil
	}
	return &errdefs.ConfigError{Key: "sandbox.backend", Source: loaded.Sources["sandbox.backend"], Reason: errdefs.ErrUnsupported,
		Msg: fmt.Sprintf("podbot %s does not run on the kubernetes backend yet (create, run, host, exec, ps, logs, rm, prune, network, tools, pool, diff, log, fetch, apply and token-daemon do); use --backend engine for it", strings.TrimPrefix(cmd.CommandPath(), "podbot "))}
}
