package localclone

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/podbot/podbot/errdefs"
)

// Bundle header limits: a sandbox's bundle names at most a few refs, so
// anything larger is refused before git sees it.
const (
	maxHeaderLine  = 1024
	maxHeaderLines = 4096
)

// Header is a parsed git bundle header (version 2 or 3).
type Header struct {
	// Prerequisites are commits the bundle's pack needs but does not hold.
	Prerequisites []string
	// Refs maps each ref name the bundle lists to its object id, in order.
	Refs []Ref
}

// Ref is one ref of a bundle.
type Ref struct {
	Name, ID string
}

// Lookup returns the id of the ref named name.
func (h Header) Lookup(name string) (string, bool) {
	for _, r := range h.Refs {
		if r.Name == name {
			return r.ID, true
		}
	}
	return "", false
}

// refused is a bundle the sandbox sent that podbot will not take.
func refused(msg string) error {
	return &errdefs.RepoError{Op: "read bundle", Reason: errdefs.ErrRefused, Msg: "the sandbox's bundle " + msg}
}

// ParseHeader reads a bundle header from r, leaving r at the pack. Lines
// are bounded in length and number; object ids must be full lower-case hex
// of one length; a version 3 capability other than object-format is
// refused. Ref names are returned as written (callers pick the names they
// asked for and ignore the rest).
func ParseHeader(r *bufio.Reader) (Header, error) {
	var h Header
	first, err := readLine(r)
	if err != nil {
		return h, err
	}
	v3 := false
	switch first {
	case "# v2 git bundle":
	case "# v3 git bundle":
		v3 = true
	default:
		return h, refused("does not start with a git bundle signature")
	}
	idLen := 0
	checkID := func(id string) error {
		if !isObjectID(id) {
			return refused(fmt.Sprintf("holds a malformed object id %s", quote(id)))
		}
		if idLen == 0 {
			idLen = len(id)
		} else if len(id) != idLen {
			return refused("mixes object id lengths")
		}
		return nil
	}
	for n := 0; ; n++ {
		if n > maxHeaderLines {
			return h, refused("has too many header lines")
		}
		line, err := readLine(r)
		if err != nil {
			return h, err
		}
		switch {
		case line == "":
			if len(h.Refs) == 0 {
				return h, refused("lists no refs")
			}
			return h, nil
		case v3 && strings.HasPrefix(line, "@"):
			if line != "@object-format=sha1" && line != "@object-format=sha256" {
				return h, refused("asks for capability " + quote(line))
			}
		case line[0] == '-':
			id, _, _ := strings.Cut(line[1:], " ")
			if err := checkID(id); err != nil {
				return h, err
			}
			h.Prerequisites = append(h.Prerequisites, id)
		default:
			id, name, ok := strings.Cut(line, " ")
			if !ok || name == "" {
				return h, refused("holds a malformed ref line")
			}
			if err := checkID(id); err != nil {
				return h, err
			}
			h.Refs = append(h.Refs, Ref{Name: name, ID: id})
		}
	}
}

// readLine reads one header line of at most maxHeaderLine bytes.
func readLine(r *bufio.Reader) (string, error) {
	var b []byte
	for {
		frag, isPrefix, err := r.ReadLine()
		if err != nil {
			if err == io.EOF {
				return "", refused("ends inside its header")
			}
			return "", refused("cannot be read: " + err.Error())
		}
		b = append(b, frag...)
		if len(b) > maxHeaderLine {
			return "", refused("has a header line that is too long")
		}
		if !isPrefix {
			return string(b), nil
		}
	}
}

// WriteBundle writes a version 2 bundle to w holding the whole history of
// commit tip under the single ref name: the header, then the pack git
// pack-objects makes. Nothing else of the repository (no other ref, no
// config, no hook) goes in.
func (r Repo) WriteBundle(ctx context.Context, g Git, w io.Writer, tip, ref string) error {
	if !isObjectID(tip) {
		return badRepo(r.Top, "commit "+quote(tip)+" is not an object id", "")
	}
	if _, err := fmt.Fprintf(w, "# v2 git bundle\n%s %s\n\n", tip, ref); err != nil {
		return err
	}
	return g.Stream(ctx, r.Top, strings.NewReader(tip+"\n"), w, nil,
		"pack-objects", "--stdout", "--revs", "--delta-base-offset", "-q")
}

// WriteShallowBundle writes to bundlePath a bundle of the last depth
// commits of tip's history under ref, through a shallow bare repository
// made under tmpDir, and returns the shallow list the copy needs (empty
// when the history is not longer than depth).
func (r Repo) WriteShallowBundle(ctx context.Context, g Git, bundlePath, tmpDir, tip, ref string, depth int) (string, error) {
	if !isObjectID(tip) || depth <= 0 {
		return "", badRepo(r.Top, "a shallow copy needs a commit id and a positive depth", "")
	}
	sdir := filepath.Join(tmpDir, "shallow.git")
	if _, err := g.Run(ctx, tmpDir, nil, nil, "init", "-q", "--bare", "--template=", sdir); err != nil {
		return "", err
	}
	if _, err := g.Run(ctx, tmpDir, nil, nil, "--git-dir="+sdir, "fetch", "-q", "--no-tags", "--depth", strconv.Itoa(depth),
		"file://"+r.Top, tip+":"+ref); err != nil {
		return "", err
	}
	if _, err := g.Run(ctx, tmpDir, nil, nil, "--git-dir="+sdir, "bundle", "create", "-q", bundlePath, ref); err != nil {
		return "", err
	}
	list, err := os.ReadFile(filepath.Join(sdir, "shallow"))
	if err != nil && !os.IsNotExist(err) {
		return "", &errdefs.FilesystemError{Op: "read", Path: sdir, Err: err}
	}
	return string(list), nil
}
