package podbot

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/distribution/reference"
	"github.com/docker/docker/api/types/build"

	"github.com/podbot/podbot/errdefs"
	sandboximage "github.com/podbot/podbot/images/sandbox"
)

// DefaultAgentImage is the agent image podbot builds with
// `podbot image build --agents`.
func DefaultAgentImage() string { return sandboximage.AgentImageName + ":" + Version }

// AgentImageOptions say how to build the agent image.
type AgentImageOptions struct {
	// Base is the sandbox image to build on; empty means DefaultImage().
	Base string
	// Agents lists the agent CLIs to install (see sandboximage.AgentCLIs);
	// empty builds the image with nested Podman only.
	Agents []string
	// CACerts are host PEM files of extra CA certificates the image trusts
	// (for a TLS-intercepting proxy in front of the npm registry).
	CACerts []string
	// Goose, when set, installs Goose from this pinned artifact; "goose"
	// in Agents needs it.
	Goose *GooseArtifact
	// Tag, when set, names the image instead of DefaultAgentImage (and
	// the latest tag is not moved): for a test or variant image beside
	// the default one.
	Tag string
	// HTTPClient fetches an https Goose artifact; nil uses a client that
	// follows https redirects only.
	HTTPClient *http.Client
	// Force rebuilds even when an image built from the same inputs exists.
	Force bool
	// Progress receives one line per build step or status; nil discards.
	Progress func(line string)
}

// maxCACert bounds one extra CA certificate file.
const maxCACert = 1 << 20

// ParseAgents checks a list of agent CLI names (see
// sandboximage.AgentCLIs, plus goose, or "none" alone for no CLI) and
// returns it sorted without duplicates.
func ParseAgents(list string) ([]string, error) {
	known := map[string]bool{sandboximage.GooseName: true}
	var names []string
	for _, c := range sandboximage.AgentCLIs() {
		known[c.Name] = true
		names = append(names, c.Name)
	}
	var out []string
	for _, a := range strings.Split(list, ",") {
		a = strings.TrimSpace(a)
		switch {
		case a == "" || a == "none":
			continue
		case !known[a]:
			return nil, &errdefs.ConfigError{Key: "--agents", Reason: errdefs.ErrInvalidValue,
				Msg: fmt.Sprintf("unknown agent %q; use a comma-separated list of %s, %s, or none", a, strings.Join(names, ", "), sandboximage.GooseName)}
		case !slices.Contains(out, a):
			out = append(out, a)
		}
	}
	slices.Sort(out)
	return out, nil
}

// BuildAgentImage builds the agent image (localhost/podbot-agent:<Version>,
// also tagged latest) on top of the sandbox image: Podman configured for
// nested containers, and Node.js with the chosen agent CLIs at their pinned
// versions. The sandbox image must exist (BuildImage first).
func BuildAgentImage(ctx context.Context, api ImageAPI, opts AgentImageOptions) (ImageBuildResult, error) {
	start := time.Now()
	progress := opts.Progress
	if progress == nil {
		progress = func(string) {}
	}
	base := opts.Base
	if base == "" {
		base = DefaultImage()
	}
	ref := DefaultAgentImage()
	tags := []string{ref, sandboximage.AgentImageName + ":" + sandboximage.LatestTag}
	if opts.Tag != "" {
		if err := checkImageTag(opts.Tag); err != nil {
			return ImageBuildResult{Image: opts.Tag, Base: base}, err
		}
		ref, tags = opts.Tag, []string{opts.Tag}
	}
	res := ImageBuildResult{Image: ref, Tags: tags, Base: base}
	agents, err := ParseAgents(strings.Join(opts.Agents, ","))
	if err != nil {
		return res, err
	}
	if opts.Goose != nil && !slices.Contains(agents, sandboximage.GooseName) {
		agents = append(agents, sandboximage.GooseName)
		slices.Sort(agents)
	}
	var gooseBin []byte
	switch {
	case slices.Contains(agents, sandboximage.GooseName) && opts.Goose == nil:
		return res, &errdefs.ConfigError{Key: "--agents", Reason: errdefs.ErrMissingRequired,
			Msg: "goose is published on no registry podbot builds from: pass its pinned release with --goose-artifact FILE|URL --goose-sha256 HEX --goose-version VERSION"}
	case opts.Goose != nil:
		if gooseBin, err = gooseBinary(ctx, *opts.Goose, opts.HTTPClient); err != nil {
			return res, err
		}
	}
	baseInfo, err := api.ImageInspect(ctx, base)
	if err != nil {
		return res, &errdefs.ContainerError{Op: "image build --agents", Reason: errdefs.ErrNotFound,
			Msg: "base image " + base + " not found", Err: err, Hint: "build it first with `podbot image build --bootstrap`"}
	}
	certs, err := readCACerts(opts.CACerts)
	if err != nil {
		return res, err
	}
	versions := agentVersions(agents, opts.Goose)
	digest := agentDigest(baseInfo.ID, agents, certs, gooseBin)
	if !opts.Force {
		if info, err := api.ImageInspect(ctx, ref); err == nil && info.Config != nil && info.Config.Labels[ContentLabel] == digest {
			progress(fmt.Sprintf("image %s is current (use --force to rebuild)", ref))
			res.ID, res.Skipped, res.Duration = info.ID, true, time.Since(start)
			return res, nil
		}
	}
	buildCtx, err := agentContextTar(certs, gooseBin)
	if err != nil {
		return res, err
	}
	args := map[string]*string{
		sandboximage.BaseArg:        strPtr(base),
		sandboximage.AgentsArg:      strPtr(strings.Join(agents, " ")),
		sandboximage.NPMSpecsArg:    strPtr(strings.Join(npmSpecs(agents), " ")),
		sandboximage.NodeVersionArg: strPtr(sandboximage.NodeVersion),
	}
	progress(fmt.Sprintf("building %s from %s with agents [%s]", ref, base, strings.Join(agents, " ")))
	resp, err := api.ImageBuild(ctx, bytes.NewReader(buildCtx), build.ImageBuildOptions{
		Tags:       res.Tags,
		Dockerfile: sandboximage.AgentsContainerfileName,
		BuildArgs:  args,
		Labels: map[string]string{ContentLabel: digest, sandboximage.VersionLabel: Version,
			sandboximage.AgentVersionsLabel: sandboximage.FormatAgentVersions(versions)},
		Remove:      true,
		ForceRemove: true,
		Version:     build.BuilderV1,
	})
	if err != nil {
		return res, &errdefs.ContainerError{Op: "image build --agents", Reason: errdefs.ErrExecFailed, Msg: "the engine refused the build", Err: err}
	}
	defer resp.Body.Close()
	if _, err := readBuildStream(resp.Body, progress); err != nil {
		return res, &errdefs.ContainerError{Op: "image build --agents", Reason: errdefs.ErrExecFailed, Msg: "build failed", Err: err,
			Hint: "behind a TLS-intercepting proxy, pass its CA with --ca-cert so npm can reach the registry"}
	}
	info, err := api.ImageInspect(ctx, ref)
	if err != nil {
		return res, &errdefs.ContainerError{Op: "image build --agents", Reason: errdefs.ErrNotFound, Msg: "built image not found afterwards", Err: err}
	}
	res.ID, res.Duration = info.ID, time.Since(start)
	return res, nil
}

// caCert is one extra CA certificate for the build context.
type caCert struct {
	name string
	data []byte
}

// readCACerts reads the PEM files, bounded, and checks they hold certificates.
func readCACerts(paths []string) ([]caCert, error) {
	var out []caCert
	for i, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			return nil, &errdefs.FilesystemError{Op: "open CA certificate", Path: p, Err: err}
		}
		var buf bytes.Buffer
		_, err = buf.ReadFrom(&limitedReader{f: f, n: maxCACert + 1})
		f.Close()
		if err != nil {
			return nil, &errdefs.FilesystemError{Op: "read CA certificate", Path: p, Err: err}
		}
		if buf.Len() > maxCACert || !bytes.Contains(buf.Bytes(), []byte("-----BEGIN CERTIFICATE-----")) {
			return nil, &errdefs.ConfigError{Key: "--ca-cert", Reason: errdefs.ErrInvalidValue,
				Msg: fmt.Sprintf("%s is not a PEM certificate file under 1 MiB", p)}
		}
		name := fmt.Sprintf("%02d-%s", i, strings.TrimSuffix(filepath.Base(p), filepath.Ext(p))) + ".crt"
		out = append(out, caCert{name: name, data: buf.Bytes()})
	}
	return out, nil
}

type limitedReader struct {
	f *os.File
	n int64
}

func (l *limitedReader) Read(p []byte) (int, error) {
	if l.n <= 0 {
		return 0, fmt.Errorf("file larger than %d bytes", maxCACert)
	}
	if int64(len(p)) > l.n {
		p = p[:l.n]
	}
	n, err := l.f.Read(p)
	l.n -= int64(n)
	return n, err
}

// npmSpecs lists the exact npm package specs the named CLIs need.
func npmSpecs(agents []string) []string {
	var specs []string
	for _, a := range agents {
		if c, ok := sandboximage.LookupAgentCLI(a); ok {
			for _, p := range c.Packages {
				specs = append(specs, p.Spec())
			}
		}
	}
	return specs
}

// agentVersions lists the installed agents with their versions, for the
// image's agent-versions label.
func agentVersions(agents []string, goose *GooseArtifact) []sandboximage.AgentVersion {
	var out []sandboximage.AgentVersion
	for _, a := range agents {
		if c, ok := sandboximage.LookupAgentCLI(a); ok {
			out = append(out, sandboximage.AgentVersion{Name: a, Version: c.Version()})
		} else if a == sandboximage.GooseName && goose != nil {
			out = append(out, sandboximage.AgentVersion{Name: a, Version: goose.Version})
		}
	}
	return out
}

// agentDigest identifies everything the agent image is built from.
func agentDigest(baseID string, agents []string, certs []caCert, gooseBin []byte) string {
	h := sha256.New()
	parts := [][]byte{sandboximage.AgentsContainerfile, sandboximage.NestedContainersConf, sandboximage.NestedStorageConf,
		[]byte(baseID), []byte(strings.Join(agents, " ")), []byte(Version), []byte(sandboximage.NodeVersion), gooseBin}
	for _, c := range sandboximage.AgentCLIs() {
		for _, p := range c.Packages {
			parts = append(parts, []byte(c.Name+":"+p.Spec()))
		}
	}
	for _, c := range certs {
		parts = append(parts, []byte(c.name), c.data)
	}
	for _, part := range parts {
		fmt.Fprintf(h, "%d:", len(part))
		h.Write(part)
	}
	return hex.EncodeToString(h.Sum(nil))[:32]
}

// agentContextTar is the agent image's build context.
func agentContextTar(certs []caCert, gooseBin []byte) ([]byte, error) {
	files := []contextFile{
		{sandboximage.AgentsContainerfileName, sandboximage.AgentsContainerfile, 0o644},
		{sandboximage.NestedContainersConfName, sandboximage.NestedContainersConf, 0o644},
		{sandboximage.NestedStorageConfName, sandboximage.NestedStorageConf, 0o644},
		// The ca/ directory always exists, so the COPY never fails.
		{sandboximage.CADir + "/README", []byte("extra CA certificates podbot image build --ca-cert added\n"), 0o644},
		{sandboximage.GooseDir + "/README", []byte("the Goose executable podbot image build --goose-artifact supplied\n"), 0o644},
	}
	if gooseBin != nil {
		files = append(files, contextFile{sandboximage.GooseDir + "/goose", gooseBin, 0o755})
	}
	for _, c := range certs {
		files = append(files, contextFile{sandboximage.CADir + "/" + c.name, c.data, 0o644})
	}
	return contextTar(files)
}

// checkImageTag accepts a named, tagged image reference without a digest
// (repository:tag), the only form a build tags.
func checkImageTag(tag string) error {
	ref, err := reference.ParseNormalizedNamed(tag)
	_, tagged := ref.(reference.NamedTagged)
	_, digested := ref.(reference.Digested)
	if err != nil || !tagged || digested {
		return &errdefs.ConfigError{Key: "--tag", Reason: errdefs.ErrInvalidValue,
			Msg: fmt.Sprintf("%q is not an image reference of the form REPOSITORY:TAG", tag)}
	}
	return nil
}
