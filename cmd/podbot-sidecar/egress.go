package main

import (
	"context"
	"crypto/x509"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"time"

	"github.com/podbot/podbot/egress"
)

// maxCABytes bounds an --upstream-ca file.
const maxCABytes = 1 << 20

// policyPollInterval is how often "egress" looks at the policy file.
const policyPollInterval = 500 * time.Millisecond

// egressOptions are the flags of "egress".
type egressOptions struct {
	listen     string
	policy     string
	log        string
	upstreamCA string
	// ready, when set, is told the listening address (tests).
	ready func(net.Addr)
}

func parseEgress(args []string, stderr io.Writer) (egressOptions, error) {
	fs := flag.NewFlagSet("egress", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var opts egressOptions
	fs.StringVar(&opts.listen, "listen", "", "address to serve the proxy on, such as 0.0.0.0:3128")
	fs.StringVar(&opts.policy, "policy", "", "policy file (JSON, written by podbot); re-read when it changes")
	fs.StringVar(&opts.log, "log", "", "decision log (JSONL), appended to")
	fs.StringVar(&opts.upstreamCA, "upstream-ca", "", "PEM file of CA certificates trusted upstream besides the system roots")
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return opts, err
		}
		return opts, fmt.Errorf("%w: %v", errUsage, err)
	}
	if fs.NArg() > 0 {
		return opts, fmt.Errorf("%w: egress takes no positional arguments (got %q)", errUsage, fs.Arg(0))
	}
	for _, f := range []struct{ name, v string }{{"--listen", opts.listen}, {"--policy", opts.policy}, {"--log", opts.log}} {
		if f.v == "" {
			return opts, fmt.Errorf("%w: egress needs %s", errUsage, f.name)
		}
	}
	return opts, nil
}

// runEgress serves the egress proxy until ctx ends, re-reading the policy
// file whenever it changes. A policy file that cannot be read at start is
// an error; one that goes bad later is reported on stderr and the policy
// in force is kept.
func runEgress(ctx context.Context, opts egressOptions, stderr io.Writer) error {
	logger := slog.New(slog.NewTextHandler(stderr, nil))
	pol, err := egress.ReadPolicyFile(opts.policy)
	if err != nil {
		return err
	}
	fi, err := os.Stat(opts.policy)
	if err != nil {
		return err
	}
	var roots *x509.CertPool
	if opts.upstreamCA != "" {
		if roots, err = loadRoots(opts.upstreamCA); err != nil {
			return err
		}
	}
	logFile, err := os.OpenFile(opts.log, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	defer logFile.Close()
	p, err := egress.New(egress.Options{Policy: pol, Log: logFile, UpstreamRoots: roots, Logger: logger})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", opts.listen)
	if err != nil {
		return err
	}
	logger.Info("egress proxy listening", "addr", ln.Addr().String(), "rules", len(pol.Rules))
	if opts.ready != nil {
		opts.ready(ln.Addr())
	}
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		watchPolicy(ctx, opts.policy, fi, p, logger)
		p.Close()
	}()
	err = p.Serve(ln)
	<-stopped
	return err
}

// watchPolicy polls path until ctx ends and loads the policy into p
// whenever the file's size, modification time or identity changes.
func watchPolicy(ctx context.Context, path string, last os.FileInfo, p *egress.Proxy, logger *slog.Logger) {
	t := time.NewTicker(policyPollInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		fi, err := os.Stat(path)
		if err != nil {
			logger.Error("egress policy file unreadable; keeping the policy in force", "err", err)
			continue
		}
		if last != nil && fi.Size() == last.Size() && fi.ModTime().Equal(last.ModTime()) && os.SameFile(fi, last) {
			continue
		}
		last = fi
		pol, err := egress.ReadPolicyFile(path)
		if err != nil {
			logger.Error("egress policy not reloaded; keeping the policy in force", "err", err)
			continue
		}
		p.SetPolicy(pol)
		logger.Info("egress policy reloaded", "rules", len(pol.Rules), "deny", len(pol.Deny))
	}
}

// loadRoots returns the system roots plus the certificates in the PEM file
// at path.
func loadRoots(path string) (*x509.CertPool, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	pem, err := io.ReadAll(io.LimitReader(f, maxCABytes+1))
	if err != nil {
		return nil, err
	}
	if len(pem) > maxCABytes {
		return nil, fmt.Errorf("--upstream-ca %s is larger than %d bytes", path, maxCABytes)
	}
	roots, err := x509.SystemCertPool()
	if err != nil || roots == nil {
		roots = x509.NewCertPool()
	}
	if !roots.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("--upstream-ca %s holds no PEM certificate", path)
	}
	return roots, nil
}
