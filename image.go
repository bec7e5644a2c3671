package podbot

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/docker/docker/api/types/build"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/client"

	"github.com/podbot/podbot/errdefs"
	sandboximage "github.com/podbot/podbot/images/sandbox"
	"github.com/podbot/podbot/tokendaemon"
)

// Image labels podbot writes on the sandbox image.
const (
	// ContentLabel holds a digest of everything the image is built from, so
	// a rebuild is skipped only when nothing changed.
	ContentLabel = "podbot.image.content"
	// BaseImageRef is the image a bootstrap build imports its rootfs as.
	BaseImageRef = "localhost/podbot-sandbox-base:bookworm"
)

// DefaultImage is the sandbox image podbot builds and uses by default.
func DefaultImage() string { return sandboximage.DefaultImageName + ":" + Version }

// ImageAPI is what an image build needs from the engine. *client.Client
// (engine.Conn.API()) satisfies it.
type ImageAPI interface {
	ImageBuild(ctx context.Context, buildContext io.Reader, options build.ImageBuildOptions) (build.ImageBuildResponse, error)
	ImageImport(ctx context.Context, source image.ImportSource, ref string, options image.ImportOptions) (io.ReadCloser, error)
	ImageInspect(ctx context.Context, ref string, opts ...client.ImageInspectOption) (image.InspectResponse, error)
}

// ImageBuildOptions says how to build the sandbox image.
type ImageBuildOptions struct {
	// Bootstrap builds on a Debian rootfs made locally with mmdebstrap and
	// imported into the engine, so no registry is needed.
	Bootstrap bool
	// Force rebuilds even when an image built from the same inputs exists.
	Force bool
	// CacheDir holds the bootstrap rootfs tar between builds. Required with Bootstrap.
	CacheDir string
	// Progress receives one line per build step or status; nil discards.
	Progress func(line string)
}

// ImageBuildResult says what BuildImage did.
type ImageBuildResult struct {
	// Image is the versioned reference; Tags lists every tag it carries.
	Image string   `json:"image"`
	Tags  []string `json:"tags"`
	// ID is the engine's image id.
	ID string `json:"id"`
	// Skipped is true when an identical image was already present.
	Skipped bool `json:"skipped"`
	// Base is the base image the build started from.
	Base string `json:"base"`
	// Duration is the wall time of the whole build.
	Duration time.Duration `json:"duration_ns"`
}

// BuildImage builds the default sandbox image (localhost/podbot-sandbox:<Version>,
// also tagged latest) through the engine's classic build API.
func BuildImage(ctx context.Context, api ImageAPI, opts ImageBuildOptions) (ImageBuildResult, error) {
	start := time.Now()
	progress := opts.Progress
	if progress == nil {
		progress = func(string) {}
	}
	base := sandboximage.DefaultBase
	if opts.Bootstrap {
		base = BaseImageRef
	}
	ref := DefaultImage()
	latest := sandboximage.DefaultImageName + ":" + sandboximage.LatestTag
	res := ImageBuildResult{Image: ref, Tags: []string{ref, latest}, Base: base}
	digest := contentDigest(base)

	if !opts.Force {
		if info, err := api.ImageInspect(ctx, ref); err == nil && info.Config != nil &&
			info.Config.Labels[ContentLabel] == digest && info.Config.Labels[sandboximage.VersionLabel] == Version {
			progress(fmt.Sprintf("image %s is current (use --force to rebuild)", ref))
			res.ID, res.Skipped, res.Duration = info.ID, true, time.Since(start)
			return res, nil
		}
	}
	if opts.Bootstrap {
		if err := ensureBaseImage(ctx, api, opts, progress); err != nil {
			return res, err
		}
	}
	progress(fmt.Sprintf("building %s from %s", ref, base))
	buildCtx, err := buildContextTar()
	if err != nil {
		return res, err
	}
	resp, err := api.ImageBuild(ctx, bytes.NewReader(buildCtx), build.ImageBuildOptions{
		Tags:        res.Tags,
		Dockerfile:  sandboximage.ContainerfileName,
		BuildArgs:   map[string]*string{sandboximage.BaseArg: &base, sandboximage.VersionArg: strPtr(Version)},
		Labels:      map[string]string{ContentLabel: digest, sandboximage.VersionLabel: Version},
		Remove:      true,
		ForceRemove: true,
		Version:     build.BuilderV1,
	})
	if err != nil {
		return res, &errdefs.ContainerError{Op: "image build", Reason: errdefs.ErrExecFailed, Msg: "the engine refused the build", Err: err,
			Hint: buildHint(opts.Bootstrap)}
	}
	defer resp.Body.Close()
	if _, err := readBuildStream(resp.Body, progress); err != nil {
		return res, &errdefs.ContainerError{Op: "image build", Reason: errdefs.ErrExecFailed, Msg: "build failed", Err: err,
			Hint: buildHint(opts.Bootstrap)}
	}
	info, err := api.ImageInspect(ctx, ref)
	if err != nil {
		return res, &errdefs.ContainerError{Op: "image build", Reason: errdefs.ErrNotFound, Msg: "built image not found afterwards", Err: err}
	}
	res.ID, res.Duration = info.ID, time.Since(start)
	return res, nil
}

func buildHint(bootstrap bool) string {
	if bootstrap {
		return ""
	}
	return "no registry reachable? build with `podbot image build --bootstrap`"
}

func strPtr(s string) *string { return &s }

// contentDigest identifies everything the image is built from.
func contentDigest(base string) string {
	h := sha256.New()
	for _, part := range [][]byte{sandboximage.Containerfile, tokendaemon.AskpassScript, []byte(base), []byte(Version)} {
		fmt.Fprintf(h, "%d:", len(part))
		h.Write(part)
	}
	return hex.EncodeToString(h.Sum(nil))[:32]
}

// buildContextTar is the build context: the Containerfile and the askpass helper.
func buildContextTar() ([]byte, error) {
	return contextTar([]contextFile{
		{sandboximage.ContainerfileName, sandboximage.Containerfile, 0o644},
		{sandboximage.AskpassContextName, tokendaemon.AskpassScript, 0o755},
	})
}

// contextFile is one regular file of an image build context.
type contextFile struct {
	name string
	data []byte
	mode int64
}

// contextTar packs files into a build-context tar. Every entry has the
// same (zero) modification time, so the same files give the same bytes.
func contextTar(files []contextFile) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		hdr := &tar.Header{Name: f.name, Mode: f.mode, Size: int64(len(f.data)), ModTime: time.Unix(0, 0), Typeflag: tar.TypeReg}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// maxBuildLine bounds one line of the engine's build stream.
const maxBuildLine = 1 << 20

// readBuildStream follows the engine's JSON build stream, reporting each
// step, and returns the image id when the engine names one.
func readBuildStream(r io.Reader, progress func(string)) (string, error) {
	dec := json.NewDecoder(io.LimitReader(r, 1<<30))
	var id string
	for {
		var msg struct {
			Stream      string `json:"stream"`
			Status      string `json:"status"`
			Error       string `json:"error"`
			ErrorDetail struct {
				Message string `json:"message"`
			} `json:"errorDetail"`
			Aux struct {
				ID string `json:"ID"`
			} `json:"aux"`
		}
		if err := dec.Decode(&msg); err != nil {
			if errors.Is(err, io.EOF) {
				return id, nil
			}
			return id, fmt.Errorf("reading the build stream: %w", err)
		}
		if msg.Error != "" || msg.ErrorDetail.Message != "" {
			m := msg.ErrorDetail.Message
			if m == "" {
				m = msg.Error
			}
			return id, errors.New(truncate(strings.TrimSpace(m), maxBuildLine))
		}
		if msg.Aux.ID != "" {
			id = msg.Aux.ID
		}
		for _, line := range strings.Split(msg.Stream+msg.Status, "\n") {
			if line = strings.TrimSpace(line); line != "" {
				progress(truncate(line, 400))
			}
		}
	}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// ensureBaseImage imports the bootstrap rootfs as BaseImageRef unless it is
// already present, making the rootfs with mmdebstrap when it is not cached.
func ensureBaseImage(ctx context.Context, api ImageAPI, opts ImageBuildOptions, progress func(string)) error {
	if _, err := api.ImageInspect(ctx, BaseImageRef); err == nil && !opts.Force {
		progress(fmt.Sprintf("base image %s present", BaseImageRef))
		return nil
	}
	if opts.CacheDir == "" {
		return &errdefs.ConfigError{Key: "cache dir", Reason: errdefs.ErrMissingRequired, Msg: "a bootstrap build needs a cache directory for the rootfs"}
	}
	tarPath := filepath.Join(opts.CacheDir, "sandbox-base-bookworm.tar")
	if err := bootstrapRootfs(ctx, tarPath, opts.Force, progress); err != nil {
		return err
	}
	f, err := os.Open(tarPath)
	if err != nil {
		return &errdefs.FilesystemError{Op: "open", Path: tarPath, Err: err}
	}
	defer f.Close()
	progress(fmt.Sprintf("importing %s as %s", tarPath, BaseImageRef))
	rc, err := api.ImageImport(ctx, image.ImportSource{Source: f, SourceName: "-"}, BaseImageRef, image.ImportOptions{})
	if err != nil {
		return &errdefs.ContainerError{Op: "image import", Reason: errdefs.ErrExecFailed, Msg: "the engine refused the rootfs import", Err: err}
	}
	defer rc.Close()
	if _, err := readBuildStream(rc, func(string) {}); err != nil {
		return &errdefs.ContainerError{Op: "image import", Reason: errdefs.ErrExecFailed, Err: err}
	}
	return nil
}

// bootstrapRootfs writes a Debian bookworm rootfs tar with mmdebstrap,
// atomically, reusing a complete one unless force is set.
func bootstrapRootfs(ctx context.Context, out string, force bool, progress func(string)) error {
	if st, err := os.Stat(out); err == nil && st.Size() > 0 && !force {
		progress(fmt.Sprintf("reusing rootfs %s", out))
		return nil
	}
	bin, err := exec.LookPath("mmdebstrap")
	if err != nil {
		return &errdefs.ContainerError{Op: "image build --bootstrap", Reason: errdefs.ErrUnsupported,
			Msg: "mmdebstrap not found", Hint: "install it with `apt-get install -y mmdebstrap`"}
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return &errdefs.FilesystemError{Op: "mkdir", Path: filepath.Dir(out), Err: err}
	}
	partial := fmt.Sprintf("%s.partial.%d", out, os.Getpid())
	defer os.Remove(partial)
	mirror := "http://deb.debian.org/debian"
	args := []string{"--variant=apt", "--format=tar", "--include=python3,git,ca-certificates,bash,coreutils",
		"bookworm", partial,
		"deb " + mirror + " bookworm main",
		"deb " + mirror + " bookworm-updates main",
		"deb http://deb.debian.org/debian-security bookworm-security main"}
	progress("mmdebstrap: bootstrapping Debian bookworm (about a minute)")
	cmd := exec.CommandContext(ctx, bin, args...)
	var stderr bytes.Buffer
	cmd.Stdin = nil
	cmd.Stderr = &limitedBuffer{buf: &stderr, max: 64 << 10}
	if err := cmd.Run(); err != nil {
		return &errdefs.ContainerError{Op: "image build --bootstrap", Reason: errdefs.ErrExecFailed,
			Msg: "mmdebstrap failed: " + lastLines(stderr.String(), 5), Err: err}
	}
	if err := os.Rename(partial, out); err != nil {
		return &errdefs.FilesystemError{Op: "rename", Path: out, Err: err}
	}
	return nil
}

// limitedBuffer keeps at most max bytes, dropping the rest.
type limitedBuffer struct {
	buf *bytes.Buffer
	max int
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if room := l.max - l.buf.Len(); room > 0 {
		if len(p) > room {
			l.buf.Write(p[:room])
		} else {
			l.buf.Write(p)
		}
	}
	return len(p), nil
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}
