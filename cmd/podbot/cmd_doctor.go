package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/podbot/podbot"
	"github.com/podbot/podbot/config"
	"github.com/podbot/podbot/engine"
)

func newDoctorCmd(f *factory) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Check that podbot can work on this host",
		Long: `Check the configuration, the engine (endpoint, reachability, kind, versions,
OCI runtime, cgroups, rootless mode), the default image, the sidecar binary and
the kernel features nested containers need. Each check is OK, WARN or FAIL with
a one-line fix. Exits 1 when any check fails.`,
		Example: `  podbot doctor
  podbot doctor --json | jq '.engine.Kind'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			report := runDoctor(cmd.Context(), f)
			if asJSON {
				if err := writeJSON(f.ios.Out, report); err != nil {
					return err
				}
			} else {
				printDoctor(f, report)
			}
			if report.Failed() {
				return &silentError{code: exitFailure}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the report as JSON")
	return cmd
}

func runDoctor(ctx context.Context, f *factory) podbot.DoctorReport {
	opts := podbot.DoctorOptions{
		Connect: func(ctx context.Context, ep engine.Endpoint) (*engine.Conn, error) {
			return engine.Connect(ctx, ep, f.tlsOptions()...)
		},
	}
	opts.Config, opts.ConfigErr = f.config(nil)
	if opts.ConfigErr == nil {
		opts.Endpoint, opts.EndpointSource, opts.EndpointErr = f.endpoint(opts.Config)
	} else {
		opts.EndpointErr = fmt.Errorf("not resolved: the configuration did not load")
	}
	opts.SidecarPath, opts.SidecarSearched = f.findSidecar()
	report := podbot.Doctor(ctx, opts)
	backend := ""
	if opts.ConfigErr == nil && opts.Config != nil {
		backend = opts.Config.Config.Sandbox.Backend
	}
	report.Checks = append(report.Checks, f.companionCheck(backend))
	report.Checks = append(report.Checks, f.kubeDoctorChecks(ctx, backend)...)
	return report
}

// companionCheck reports the kubernetes backend's companion binary: found
// and acceptable (the same checks the hand-over makes), or why not. A
// missing companion fails only when sandbox.backend is kubernetes.
func (f *factory) companionCheck(backend string) podbot.Check {
	c := podbot.Check{Name: "kubernetes"}
	if kubernetesBuild {
		c.Status, c.Detail = podbot.CheckOK, "this is "+companionName+", podbot with the kubernetes backend"
		return c
	}
	path, err := findCompanion(f.handOver.executable)
	switch {
	case err == nil:
		c.Status, c.Detail = podbot.CheckOK, companionName+" at "+path+" (backend "+orEngine(backend)+")"
	case backend == config.BackendKubernetes:
		c.Status, c.Detail = podbot.CheckFail, "sandbox.backend is kubernetes but its companion binary cannot be used"
		c.Fix = err.Error()
	default:
		c.Status, c.Detail = podbot.CheckOK, companionName+" not usable (needed only for sandbox.backend = kubernetes): "+err.Error()
	}
	return c
}

// orEngine names the default backend for an unset one.
func orEngine(backend string) string {
	if backend == "" {
		return config.BackendEngine
	}
	return backend
}

func printDoctor(f *factory, r podbot.DoctorReport) {
	for _, c := range r.Checks {
		tag := map[podbot.CheckStatus]string{podbot.CheckOK: "OK  ", podbot.CheckWarn: "WARN", podbot.CheckFail: "FAIL"}[c.Status]
		fmt.Fprintf(f.ios.Out, "%s  %-17s %s\n", tag, c.Name, c.Detail)
		if c.Fix != "" && c.Status != podbot.CheckOK {
			fmt.Fprintf(f.ios.Out, "      %-17s fix: %s\n", "", c.Fix)
		}
	}
}

// findSidecar looks for podbot-sidecar: $PODBOT_SIDECAR_PATH, next to the
// podbot executable, then $PATH.
func (f *factory) findSidecar() (string, []string) {
	var searched []string
	if p := f.getenv("PODBOT_SIDECAR_PATH"); p != "" {
		searched = append(searched, p)
		if isExecutable(p) {
			return p, searched
		}
		return "", searched
	}
	if exe, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(exe), "podbot-sidecar")
		searched = append(searched, p)
		if isExecutable(p) {
			return p, searched
		}
	}
	searched = append(searched, "$PATH")
	if p, err := exec.LookPath("podbot-sidecar"); err == nil && !strings.HasPrefix(p, ".") {
		return p, searched
	}
	return "", searched
}

func isExecutable(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0
}
