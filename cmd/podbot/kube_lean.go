//go:build !kubernetes

package main

import (
	"context"

	"github.com/podbot/podbot"
	"github.com/podbot/podbot/config"
	"github.com/podbot/podbot/errdefs"
	"github.com/podbot/podbot/pool"
)

// kubernetesBuild reports that this binary carries the kubernetes backend.
// The lean podbot does not: it links no client-go and hands the commands
// the backend serves to the companion podbot-kube (see handover.go).
const kubernetesBuild = false

// kubeState is empty in the lean build: it never connects to a cluster.
type kubeState struct{}

// errNoKubeBackend is what the backend's entry points return in the lean
// build. The hand-over runs before any of them, so reaching one means a
// command that uses the backend is missing from kubeServed.
func errNoKubeBackend(cmd string) error {
	return &errdefs.ConfigError{Key: "sandbox.backend", Reason: errdefs.ErrUnsupported,
		Msg: "podbot " + cmd + " on the kubernetes backend runs in the companion binary " + companionName + ", and this podbot did not hand it over; run " + companionName + " directly"}
}

func createOnKubernetes(context.Context, *factory, *createOptions, config.Config) error {
	return errNoKubeBackend("create")
}

func runOnKubernetes(context.Context, *factory, podbot.RunOptions) (podbot.RunResult, error) {
	return podbot.RunResult{}, errNoKubeBackend("run")
}

func hostOnKubernetes(context.Context, *factory, podbot.HostOptions) (int, error) {
	return 0, errNoKubeBackend("host")
}

func execOnKubernetes(context.Context, *factory, *execOptions) error {
	return errNoKubeBackend("exec")
}

func psOnKubernetes(context.Context, *factory, *psOptions) ([]podbot.Container, error) {
	return nil, errNoKubeBackend("ps")
}

func rmOnKubernetes(context.Context, *factory, *rmOptions) error {
	return errNoKubeBackend("rm")
}

func logsOnKubernetes(context.Context, *factory, *logsOptions) error {
	return errNoKubeBackend("logs")
}

func openKubeReview(context.Context, *factory, string, string) (*podbot.Review, error) {
	return nil, errNoKubeBackend("diff, log, fetch and apply")
}

func openKubeToolSession(context.Context, *factory, podbot.ToolSessionOptions) (podbot.ToolSession, error) {
	return nil, errNoKubeBackend("tools")
}

func (f *factory) kubePoolBackend(config.Config) (pool.Backend, error) {
	return nil, errNoKubeBackend("pool")
}

func networkOnKubernetes(context.Context, *factory, string, *networkOptions) error {
	return errNoKubeBackend("network")
}

func pruneOnKubernetes(context.Context, *factory, *pruneOptions) error {
	return errNoKubeBackend("prune")
}

// kubeDoctorChecks is empty in the lean build: with sandbox.backend =
// kubernetes, doctor runs in the companion, which reads the cluster.
func (f *factory) kubeDoctorChecks(context.Context, string) []podbot.Check { return nil }

func tokenDaemonOnKubernetes(context.Context, *factory, *tokenDaemonOptions, podbot.TokenDaemonOptions) error {
	return errNoKubeBackend("token-daemon")
}
