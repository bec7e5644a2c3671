package localclone

import (
	"bufio"
	"errors"
	"strings"
	"testing"

	"github.com/podbot/podbot/errdefs"
)

const idA = "a0bdaf288ebf49a34bb7528ec4ec4ced3f46a227"
const idB = "e6d78a3eb239ccfb25c6f2ef539e4527cccf4bfd"

func TestParseHeader(t *testing.T) {
	in := "# v2 git bundle\n-" + idA + " c3\n" + idB + " refs/heads/podbot/x\n" + idA + " refs/heads/main\n\nPACK"
	r := bufio.NewReader(strings.NewReader(in))
	h, err := ParseHeader(r)
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Prerequisites) != 1 || h.Prerequisites[0] != idA {
		t.Errorf("prerequisites %v", h.Prerequisites)
	}
	if id, ok := h.Lookup("refs/heads/podbot/x"); !ok || id != idB {
		t.Errorf("lookup = %q %v", id, ok)
	}
	rest, _ := r.ReadString(0)
	if rest != "PACK" {
		t.Errorf("reader left at %q", rest)
	}
}

func TestParseHeaderRefuses(t *testing.T) {
	for name, in := range map[string]string{
		"no signature":   "PACK",
		"empty":          "",
		"bad id":         "# v2 git bundle\nzzzz refs/heads/x\n\n",
		"upper-case id":  "# v2 git bundle\n" + strings.ToUpper(idA) + " refs/heads/x\n\n",
		"no refs":        "# v2 git bundle\n-" + idA + "\n\n",
		"no name":        "# v2 git bundle\n" + idA + "\n\n",
		"truncated":      "# v2 git bundle\n" + idA + " refs/heads/x\n",
		"long line":      "# v2 git bundle\n" + idA + " refs/heads/" + strings.Repeat("x", 2000) + "\n\n",
		"v3 capability":  "# v3 git bundle\n@filter=blob:none\n" + idA + " refs/heads/x\n\n",
		"mixed lengths":  "# v2 git bundle\n" + idA + " refs/heads/x\n" + idA + idA[:24] + " refs/heads/y\n\n",
		"v3 in v2 frame": "# v2 git bundle\n@object-format=sha1\n" + idA + " refs/heads/x\n\n",
	} {
		_, err := ParseHeader(bufio.NewReader(strings.NewReader(in)))
		if !errors.Is(err, errdefs.ErrRefused) || !errors.Is(err, errdefs.ErrRepo) {
			t.Errorf("%s: err = %v, want a refused RepoError", name, err)
		}
	}
}

func FuzzParseHeader(f *testing.F) {
	f.Add("# v2 git bundle\n-" + idA + " c\n" + idB + " refs/heads/podbot/x\n\nPACK")
	f.Add("# v3 git bundle\n@object-format=sha1\n" + idB + " ../../x\n\n")
	f.Add("# v2 git bundle\n" + idB + " refs/heads/main\x1b[2J\n\n")
	f.Fuzz(func(t *testing.T, in string) {
		h, err := ParseHeader(bufio.NewReader(strings.NewReader(in)))
		if err != nil {
			if !errors.Is(err, errdefs.ErrRepo) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		if len(h.Refs) == 0 {
			t.Fatal("accepted a bundle without refs")
		}
		for _, r := range h.Refs {
			if !isObjectID(r.ID) || r.Name == "" || len(r.Name) > maxHeaderLine {
				t.Fatalf("accepted ref %+v", r)
			}
		}
		for _, p := range h.Prerequisites {
			if !isObjectID(p) {
				t.Fatalf("accepted prerequisite %q", p)
			}
		}
	})
}
