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
	"os/signal"
	"path/filepath"
	"syscall"
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
	// loaded, when set, is the file the proxy writes the digest of each
	// policy it puts in force to (egress.PolicyDigest).
	loaded string
	// secrets, caCert and caKey enable the credential vault; all three or
	// none.
	secrets, caCert, caKey string
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
	fs.StringVar(&opts.loaded, "loaded", "", "file to write the digest of the policy in force to, after each load")
	fs.StringVar(&opts.upstreamCA, "upstream-ca", "", "PEM file of CA certificates trusted upstream besides the system roots")
	fs.StringVar(&opts.secrets, "secrets", "", "vault secrets file (JSON, mode 0600, written by podbot); re-read when it changes")
	fs.StringVar(&opts.caCert, "ca-cert", "", "PEM certificate of the sandbox CA that intercepts the secrets' hosts")
	fs.StringVar(&opts.caKey, "ca-key", "", "PEM private key of the sandbox CA (mode 0600)")
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
	if set := btoi(opts.secrets != "") + btoi(opts.caCert != "") + btoi(opts.caKey != ""); set != 0 && set != 3 {
		return opts, fmt.Errorf("%w: --secrets, --ca-cert and --ca-key go together", errUsage)
	}
	return opts, nil
}

// runEgress serves the egress proxy until ctx ends, re-reading the policy
// file whenever it changes. A policy file that cannot be read at start is
// an error; one that goes bad later is reported on stderr and the policy
// in force is kept.
func runEgress(ctx context.Context, opts egressOptions, stderr io.Writer) error {
	logger := slog.New(slog.NewTextHandler(stderr, nil))
	pol, digest, err := egress.ReadPolicyFileDigest(opts.policy)
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
	var (
		secrets   []egress.Secret
		secretsFI os.FileInfo
		ca        *egress.CA
	)
	if opts.secrets != "" {
		if ca, err = loadCA(opts.caCert, opts.caKey); err != nil {
			return err
		}
		if secrets, err = egress.ReadSecretsFile(opts.secrets); err != nil {
			return err
		}
		if secretsFI, err = os.Stat(opts.secrets); err != nil {
			return err
		}
	}
	logFile, err := os.OpenFile(opts.log, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	defer logFile.Close()
	p, err := egress.New(egress.Options{Policy: pol, Log: logFile, UpstreamRoots: roots, Logger: logger, Secrets: secrets, CA: ca})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", opts.listen)
	if err != nil {
		return err
	}
	logger.Info("egress proxy listening", "addr", ln.Addr().String(), "rules", len(pol.Rules), "secrets", len(secrets))
	markLoaded(opts.loaded, digest, logger)
	if opts.ready != nil {
		opts.ready(ln.Addr())
	}
	// SIGHUP asks for a look at the files now rather than at the next
	// poll: podbot sends it after writing a claimed pool member's policy.
	poke := make(chan os.Signal, 1)
	signal.Notify(poke, syscall.SIGHUP)
	defer signal.Stop(poke)
	stopped := make(chan struct{})
	if opts.secrets != "" {
		secretsDone := make(chan struct{})
		go func() { defer close(secretsDone); watchSecrets(ctx, opts.secrets, secretsFI, p, logger) }()
		defer func() { <-secretsDone }()
	}
	go func() {
		defer close(stopped)
		watchPolicy(ctx, opts.policy, opts.loaded, fi, p, poke, logger)
		p.Close()
	}()
	err = p.Serve(ln)
	<-stopped
	return err
}

// watchFile polls path until ctx ends and calls reload whenever the file's
// size, modification time or identity changes. A file that is unreadable or
// that reload refuses is reported by its error alone (never its content)
// and what is in force is kept; what names the file in those lines.
// A value on poke (nil: none) makes it look at once.
func watchFile(ctx context.Context, path string, last os.FileInfo, what string, reload func() (string, error), poke <-chan os.Signal, logger *slog.Logger) {
	t := time.NewTicker(policyPollInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-poke:
		}
		fi, err := os.Stat(path)
		if err != nil {
			logger.Error("egress "+what+" file unreadable; keeping the "+what+" in force", "err", err)
			continue
		}
		if last != nil && fi.Size() == last.Size() && fi.ModTime().Equal(last.ModTime()) && os.SameFile(fi, last) {
			continue
		}
		last = fi
		detail, err := reload()
		if err != nil {
			logger.Error("egress "+what+" not reloaded; keeping the "+what+" in force", "err", err)
			continue
		}
		logger.Info("egress "+what+" reloaded", "loaded", detail)
	}
}

// watchPolicy reloads the proxy's policy from path whenever it changes.
// After each load it records the policy's digest in loaded (if set).
func watchPolicy(ctx context.Context, path, loaded string, last os.FileInfo, p *egress.Proxy, poke <-chan os.Signal, logger *slog.Logger) {
	watchFile(ctx, path, last, "policy", func() (string, error) {
		pol, digest, err := egress.ReadPolicyFileDigest(path)
		if err != nil {
			return "", err
		}
		p.SetPolicy(pol)
		markLoaded(loaded, digest, logger)
		return fmt.Sprintf("%d rules, %d denies", len(pol.Rules), len(pol.Deny)), nil
	}, poke, logger)
}

// watchSecrets gives the proxy the vault's secrets from path whenever the
// file changes (a refreshed token).
func watchSecrets(ctx context.Context, path string, last os.FileInfo, p *egress.Proxy, logger *slog.Logger) {
	watchFile(ctx, path, last, "secrets", func() (string, error) {
		ss, err := egress.ReadSecretsFile(path)
		if err == nil {
			err = p.SetSecrets(ss)
		}
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("%d secrets", len(ss)), nil
	}, nil, logger)
}

// loadCA reads the sandbox CA: its certificate, and its key from a file
// only its owner may read.
func loadCA(certPath, keyPath string) (*egress.CA, error) {
	cert, err := readBounded(certPath, false)
	if err != nil {
		return nil, err
	}
	key, err := readBounded(keyPath, true)
	if err != nil {
		return nil, err
	}
	return egress.ParseCA(cert, key)
}

// readBounded reads a regular file of at most maxCABytes; private refuses
// one that others may read.
func readBounded(path string, private bool) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	if private && st.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("%s has mode %04o; a private key must be 0600", path, st.Mode().Perm())
	}
	b, err := io.ReadAll(io.LimitReader(f, maxCABytes+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxCABytes {
		return nil, fmt.Errorf("%s is larger than %d bytes", path, maxCABytes)
	}
	return b, nil
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
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

// markLoaded writes digest, the policy now in force, to path (when set):
// a temporary file in the same directory renamed over it, so a reader sees
// one whole digest. A failure is logged; the policy stays in force.
func markLoaded(path, digest string, logger *slog.Logger) {
	if path == "" {
		return
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err == nil {
		tmp := f.Name()
		_, err = f.WriteString(digest + "\n")
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = os.Chmod(tmp, 0o644)
		}
		if err == nil {
			err = os.Rename(tmp, path)
		}
		if err != nil {
			_ = os.Remove(tmp)
		}
	}
	if err != nil {
		logger.Error("cannot record the policy in force", "err", err)
	}
}
