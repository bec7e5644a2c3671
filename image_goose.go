package podbot

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/bzip2"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path"
	"strings"
	"time"

	"github.com/podbot/podbot/errdefs"
	sandboximage "github.com/podbot/podbot/images/sandbox"
)

// GooseArtifact is a pinned Goose release the agent image installs. No
// registry podbot builds from publishes Goose, so the operator names the
// release artifact and its sha256, and podbot refuses anything else.
type GooseArtifact struct {
	// Source is a local file or an https:// URL of a Goose release
	// artifact: a .tar.bz2, .tar.gz or .tar holding an executable named
	// goose (the upstream Linux release archives), or the executable
	// itself.
	Source string
	// SHA256 is the artifact's lowercase hex sha256, checked before
	// anything in it is used.
	SHA256 string
	// Version is the Goose version the artifact holds, recorded in the
	// image's agent-versions label.
	Version string
}

// Artifact and executable size bounds.
const (
	maxGooseArtifact = 512 << 20
	maxGooseBinary   = 512 << 20
	gooseFetchLimit  = 10 * time.Minute
)

// check validates the fields before any I/O.
func (g GooseArtifact) check() error {
	if strings.TrimSpace(g.Source) == "" {
		return gooseError("--goose-artifact", "names no file or URL")
	}
	if b, err := hex.DecodeString(g.SHA256); err != nil || len(b) != sha256.Size || strings.ToLower(g.SHA256) != g.SHA256 {
		return gooseError("--goose-sha256", fmt.Sprintf("%q is not a lowercase hex sha256 (64 characters)", g.SHA256))
	}
	if !sandboximage.ValidAgentVersion(g.Version) {
		return gooseError("--goose-version", fmt.Sprintf("%q is not a version (letters, digits, . _ + -)", g.Version))
	}
	if strings.Contains(g.Source, "://") {
		u, err := url.Parse(g.Source)
		if err != nil || u.Scheme != "https" || u.Host == "" || u.User != nil {
			return gooseError("--goose-artifact", "a URL must be https://HOST/PATH without credentials; download it yourself otherwise and pass the file")
		}
	}
	return nil
}

// display names the source for messages: a URL loses its query and
// fragment, which may carry a download token.
func (g GooseArtifact) display() string {
	if u, err := url.Parse(g.Source); err == nil && u.Scheme != "" {
		return u.Scheme + "://" + u.Host + u.EscapedPath()
	}
	return g.Source
}

func gooseError(key, msg string) error {
	return &errdefs.ConfigError{Key: key, Reason: errdefs.ErrInvalidValue, Msg: "Goose artifact: " + msg}
}

// gooseBinary reads the artifact (bounded), checks its sha256 and returns
// the goose executable in it.
func gooseBinary(ctx context.Context, g GooseArtifact, client *http.Client) ([]byte, error) {
	if err := g.check(); err != nil {
		return nil, err
	}
	raw, err := readGooseArtifact(ctx, g.Source, client)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(raw)
	if got := hex.EncodeToString(sum[:]); got != g.SHA256 {
		return nil, &errdefs.ConfigError{Key: "--goose-sha256", Reason: errdefs.ErrConflict,
			Msg: fmt.Sprintf("Goose artifact %s has sha256 %s, not the pinned %s; check the release you downloaded", g.display(), got, g.SHA256)}
	}
	bin, err := extractGoose(raw)
	if err != nil {
		return nil, &errdefs.ConfigError{Key: "--goose-artifact", Reason: errdefs.ErrInvalidValue,
			Msg: fmt.Sprintf("Goose artifact %s: %v", g.display(), err)}
	}
	return bin, nil
}

// readGooseArtifact reads a local file or fetches an https URL, at most
// maxGooseArtifact bytes.
func readGooseArtifact(ctx context.Context, src string, client *http.Client) ([]byte, error) {
	var r io.Reader
	if strings.HasPrefix(src, "https://") {
		if client == nil {
			client = &http.Client{CheckRedirect: func(req *http.Request, via []*http.Request) error {
				if req.URL.Scheme != "https" || len(via) > 5 {
					return errors.New("redirect away from https refused")
				}
				return nil
			}}
		}
		ctx, cancel := context.WithTimeout(ctx, gooseFetchLimit)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, src, nil)
		if err != nil {
			return nil, gooseError("--goose-artifact", "not a valid URL")
		}
		resp, err := client.Do(req)
		if err != nil {
			return nil, &errdefs.ContainerError{Op: "image build --agents", Reason: errdefs.ErrConnectionFailed, Msg: "fetch the Goose artifact", Err: err,
				Hint: "download it on a machine that can, and pass the file to --goose-artifact"}
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return nil, &errdefs.ContainerError{Op: "image build --agents", Reason: errdefs.ErrConnectionFailed,
				Msg: fmt.Sprintf("fetch the Goose artifact: HTTP %d", resp.StatusCode)}
		}
		r = resp.Body
	} else {
		f, err := os.Open(src)
		if err != nil {
			return nil, &errdefs.FilesystemError{Op: "open Goose artifact", Path: src, Err: err}
		}
		defer f.Close()
		r = f
	}
	data, err := io.ReadAll(io.LimitReader(r, maxGooseArtifact+1))
	if err != nil {
		return nil, &errdefs.FilesystemError{Op: "read Goose artifact", Path: GooseArtifact{Source: src}.display(), Err: err}
	}
	if len(data) > maxGooseArtifact {
		return nil, gooseError("--goose-artifact", fmt.Sprintf("larger than %d MiB", maxGooseArtifact>>20))
	}
	return data, nil
}

// extractGoose returns the goose executable from a release archive
// (tar, optionally gzip or bzip2 compressed), or raw itself when raw is an
// executable (ELF or #! script). In an archive, the one regular file whose
// base name is goose is taken; links, devices and every other entry are
// ignored, and nothing is written to disk.
func extractGoose(raw []byte) ([]byte, error) {
	var r io.Reader
	switch {
	case bytes.HasPrefix(raw, []byte{0x1f, 0x8b}):
		zr, err := gzip.NewReader(bytes.NewReader(raw))
		if err != nil {
			return nil, fmt.Errorf("bad gzip data: %w", err)
		}
		r = zr
	case bytes.HasPrefix(raw, []byte("BZh")):
		r = bzip2.NewReader(bytes.NewReader(raw))
	case len(raw) > 262 && string(raw[257:262]) == "ustar":
		r = bytes.NewReader(raw)
	case bytes.HasPrefix(raw, []byte("\x7fELF")) || bytes.HasPrefix(raw, []byte("#!")):
		if len(raw) > maxGooseBinary {
			return nil, fmt.Errorf("executable larger than %d MiB", maxGooseBinary>>20)
		}
		return raw, nil
	default:
		return nil, errors.New("neither a tar archive (.tar, .tar.gz, .tar.bz2) nor an executable")
	}
	tr := tar.NewReader(bufio.NewReader(r))
	var found []byte
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("bad archive: %w", err)
		}
		if hdr.Typeflag != tar.TypeReg || path.Base(hdr.Name) != "goose" {
			continue
		}
		if found != nil {
			return nil, errors.New("archive holds more than one file named goose")
		}
		if hdr.Size > maxGooseBinary {
			return nil, fmt.Errorf("goose in the archive is larger than %d MiB", maxGooseBinary>>20)
		}
		data, err := io.ReadAll(io.LimitReader(tr, maxGooseBinary+1))
		if err != nil {
			return nil, fmt.Errorf("bad archive: %w", err)
		}
		if len(data) > maxGooseBinary {
			return nil, fmt.Errorf("goose in the archive is larger than %d MiB", maxGooseBinary>>20)
		}
		found = data
	}
	if found == nil {
		return nil, errors.New("archive holds no regular file named goose")
	}
	return found, nil
}
