//go:build kubernetes

package main

import (
	"context"

	"github.com/podbot/podbot"
)

// networkOnKubernetes is podbot network show, allow, deny or log (verb) for
// a sandbox Pod: its egress proxy's ConfigMap and decision log.
func networkOnKubernetes(ctx context.Context, f *factory, verb string, opts *networkOptions) error {
	kc, err := f.kubeClient()
	if err != nil {
		return err
	}
	switch verb {
	case "log":
		return podbot.NetworkLogOnKubernetes(ctx, kc, opts.ref, podbot.NetworkLogOptions{Follow: opts.follow}, logPrinter(f.ios.Out, opts.json))
	case "allow", "deny":
		change := podbot.NetworkAllowOnKubernetes
		if verb == "deny" {
			change = podbot.NetworkDenyOnKubernetes
		}
		np, err := change(ctx, kc, opts.ref, opts.host)
		if err != nil {
			return err
		}
		f.logger.Info("egress policy changed; the kubelet brings it into the proxy Pod within about a minute", "sandbox", np.Sandbox, verb, opts.host)
		return nil
	}
	np, err := podbot.NetworkShowOnKubernetes(ctx, kc, opts.ref)
	if err != nil {
		return err
	}
	return printPolicy(f.ios.Out, np, opts.json)
}
