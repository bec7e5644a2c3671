//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/podbot/podbot"
	"github.com/podbot/podbot/engine"
	"github.com/podbot/podbot/launchplan"
)

// Size of the benchmark repository: benchFiles files in the first commit,
// then benchRewrites commits that each rewrite benchRewriteFiles of them;
// about 200 MB of (incompressible) history.
const (
	benchFiles        = 20000
	benchFileSize     = 8 << 10
	benchRewrites     = 4
	benchRewriteFiles = 2000
	benchRewriteSize  = 5 << 10
)

// benchRepo returns the benchmark repository, generated once with git
// fast-import and kept under $PODBOT_STATE_DIR/bench (or the user cache
// directory) for later runs.
func benchRepo(b *testing.B) string {
	b.Helper()
	root := os.Getenv("PODBOT_STATE_DIR")
	if root == "" {
		c, err := os.UserCacheDir()
		if err != nil {
			b.Fatal(err)
		}
		root = filepath.Join(c, "podbot")
	}
	dir := filepath.Join(root, "bench", fmt.Sprintf("localclone-%d", benchFiles))
	if _, err := os.Stat(filepath.Join(dir, ".podbot-bench-complete")); err == nil {
		return dir
	}
	_ = os.RemoveAll(dir)
	run := func(stdinFn func(w *bufio.Writer) error, args ...string) {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null")
		var in *os.File
		var pw *os.File
		if stdinFn != nil {
			var err error
			in, pw, err = os.Pipe()
			if err != nil {
				b.Fatal(err)
			}
			cmd.Stdin = in
		}
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		if stdinFn != nil {
			in.Close()
			w := bufio.NewWriterSize(pw, 1<<20)
			if err := stdinFn(w); err != nil {
				b.Fatal(err)
			}
			w.Flush()
			pw.Close()
		}
		if err := cmd.Wait(); err != nil {
			b.Fatalf("git %v: %v", args, err)
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	run(nil, "init", "-q", "-b", "main")
	rng := rand.New(rand.NewSource(1))
	blob := func(w *bufio.Writer, size int) {
		buf := make([]byte, size)
		rng.Read(buf)
		fmt.Fprintf(w, "data %d\n", size)
		w.Write(buf)
		w.WriteString("\n")
	}
	run(func(w *bufio.Writer) error {
		for c := 0; c <= benchRewrites; c++ {
			fmt.Fprintf(w, "commit refs/heads/main\ncommitter bench <bench@example.com> %d +0000\ndata 8\ncommit %d\n", 1700000000+c, c)
			n, size := benchFiles, benchFileSize
			if c > 0 {
				n, size = benchRewriteFiles, benchRewriteSize
			}
			for i := 0; i < n; i++ {
				f := i
				if c > 0 {
					f = rng.Intn(benchFiles)
				}
				fmt.Fprintf(w, "M 644 inline d%02d/f%05d\n", f%100, f)
				blob(w, size)
			}
			w.WriteString("\n")
		}
		return nil
	}, "fast-import", "--quiet")
	run(nil, "checkout", "-q", "-f", "main")
	if err := os.WriteFile(filepath.Join(dir, ".git", "info", "exclude"), []byte(".podbot-bench-complete\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ".podbot-bench-complete"), nil, 0o644); err != nil {
		b.Fatal(err)
	}
	return dir
}

// benchSandbox creates a sandbox with no network for a benchmark on e and
// removes it at cleanup.
func benchSandbox(b *testing.B, ctx context.Context, e engineUnderTest, purpose string) string {
	b.Helper()
	name := fmt.Sprintf("pbt-%s-%s-%s", suite.runID, e.Name, purpose)
	b.Cleanup(func() {
		_ = exec.Command(filepath.Join(suite.bin, "podbot"), "--engine-socket", e.Endpoint, "rm", "-f", name).Run()
	})
	cmd := exec.CommandContext(ctx, filepath.Join(suite.bin, "podbot"), "--engine-socket", e.Endpoint, "create", "--name", name, "--network", "none")
	cmd.Env = benchEnv(b)
	out, err := cmd.CombinedOutput()
	if err != nil {
		b.Fatalf("create: %v\n%s", err, out)
	}
	return name
}

// BenchmarkLocalCloneCopy copies the benchmark repository into a sandbox
// (bundle, copy API, clone inside) and, in the same run, clones it on the
// host with git clone --no-local; it reports the ratio (target ≤ 1.5).
func BenchmarkLocalCloneCopy(b *testing.B) {
	repo := benchRepo(b)
	for _, e := range suite.engines {
		b.Run(e.Name, func(b *testing.B) {
			ctx := context.Background()
			name := benchSandbox(b, ctx, e, "lc-bench")
			conn := engineConnFor(b, ctx, e)
			hostDir := b.TempDir()
			var host, sandbox time.Duration
			b.StopTimer()
			for i := 0; i < b.N; i++ {
				dst := filepath.Join(hostDir, fmt.Sprintf("c%d", i))
				t0 := time.Now()
				if out, err := exec.Command("git", "clone", "-q", "--no-local", repo, dst).CombinedOutput(); err != nil {
					b.Fatalf("git clone: %v\n%s", err, out)
				}
				host += time.Since(t0)
				os.RemoveAll(dst)

				dir := fmt.Sprintf("/work/bench%d", i)
				t1 := time.Now()
				if _, err := podbot.CopyLocalRepo(ctx, conn, name, launchplan.Plan{Name: name}, podbot.LocalCloneOptions{Path: repo}, dir, os.Environ()); err != nil {
					b.Fatal(err)
				}
				sandbox += time.Since(t1)
				if out, err := exec.Command(filepath.Join(suite.bin, "podbot"), "--engine-socket", e.Endpoint, "exec", "-T", name, "--", "rm", "-rf", dir).CombinedOutput(); err != nil {
					b.Fatalf("rm: %v\n%s", err, out)
				}
			}
			b.ReportMetric(float64(host.Milliseconds())/float64(b.N), "host-clone-ms/op")
			b.ReportMetric(float64(sandbox.Milliseconds())/float64(b.N), "sandbox-copy-ms/op")
			b.ReportMetric(float64(sandbox)/float64(host), "x-clone-no-local")
		})
	}
}

// BenchmarkLocalCloneDiff times podbot diff of a one-file change in a
// sandbox holding the benchmark repository (the whole CLI, as a user runs
// it) and, as the baseline, host git diff of the same change in a host
// clone; it reports the p50 of each and their ratio (target p50 ≤ 300 ms).
func BenchmarkLocalCloneDiff(b *testing.B) {
	repo := benchRepo(b)
	for _, e := range suite.engines {
		b.Run(e.Name, func(b *testing.B) {
			lname := fmt.Sprintf("pbt-%s-%s-lc-diffcli", suite.runID, e.Name)
			b.Cleanup(func() {
				_ = exec.Command(filepath.Join(suite.bin, "podbot"), "--engine-socket", e.Endpoint, "rm", "-f", lname).Run()
			})
			pb := func(args ...string) []byte {
				cmd := exec.Command(filepath.Join(suite.bin, "podbot"), append([]string{"--engine-socket", e.Endpoint}, args...)...)
				cmd.Dir = repo
				cmd.Env = benchEnv(b)
				out, err := cmd.Output()
				if err != nil {
					b.Fatalf("podbot %v: %v", args, err)
				}
				return out
			}
			pb("create", "--name", lname, "--network", "none", "--repo", repo)
			pb("exec", "-T", lname, "--", "sh", "-c", "echo changed >> /work/"+filepath.Base(repo)+"/d00/f00000")
			hostClone := filepath.Join(b.TempDir(), "h")
			if out, err := exec.Command("git", "clone", "-q", repo, hostClone).CombinedOutput(); err != nil {
				b.Fatalf("clone: %v\n%s", err, out)
			}
			f, _ := os.OpenFile(filepath.Join(hostClone, "d00", "f00000"), os.O_APPEND|os.O_WRONLY, 0)
			f.WriteString("changed\n")
			f.Close()
			var pod, git []time.Duration
			b.StopTimer()
			for i := 0; i < b.N; i++ {
				t0 := time.Now()
				if out := pb("diff", lname); len(out) == 0 {
					b.Fatal("empty diff")
				}
				pod = append(pod, time.Since(t0))
				t1 := time.Now()
				cmd := exec.Command("git", "-C", hostClone, "diff")
				if out, err := cmd.Output(); err != nil || len(out) == 0 {
					b.Fatalf("git diff: %v", err)
				}
				git = append(git, time.Since(t1))
			}
			p50 := func(d []time.Duration) time.Duration {
				sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
				return d[len(d)/2]
			}
			pp, gp := p50(pod), p50(git)
			b.ReportMetric(float64(pp.Microseconds())/1000, "diff-p50-ms")
			b.ReportMetric(float64(gp.Microseconds())/1000, "git-diff-p50-ms")
			b.ReportMetric(float64(pp)/float64(gp), "x-git-diff")
		})
	}
}

// engineConnFor opens a podbot engine connection to e, closed at cleanup.
func engineConnFor(tb testing.TB, ctx context.Context, e engineUnderTest) *engine.Conn {
	tb.Helper()
	ep, err := engine.ParseEndpoint(e.Endpoint)
	if err != nil {
		tb.Fatal(err)
	}
	conn, err := engine.Connect(ctx, ep)
	if err != nil {
		tb.Fatalf("connect to %s: %v", e.Endpoint, err)
	}
	tb.Cleanup(func() { conn.Close() })
	return conn
}

// benchEnv is the environment with an empty podbot configuration.
func benchEnv(b *testing.B) []string {
	b.Helper()
	cfg := filepath.Join(b.TempDir(), "config.toml")
	if err := os.WriteFile(cfg, nil, 0o600); err != nil {
		b.Fatal(err)
	}
	return append(os.Environ(), "PODBOT_CONFIG_PATH="+cfg)
}
