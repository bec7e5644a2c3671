package gitcred

import (
	"errors"
	"io"
	"os"
	"strings"

	"github.com/podbot/podbot/errdefs"
)

// maxFileLen bounds what is read of the token and origin files.
const maxFileLen = 4096

// ReadOrigin reads the allowed origin from path (OriginPath in a sandbox):
// one line in the form Origin.String writes. A missing, empty or
// non-canonical file is an error, so git gets no token without it.
func ReadOrigin(path string) (Origin, error) {
	line, err := firstLine(path, "clone origin")
	if err != nil {
		return Origin{}, err
	}
	o, err := ReadOriginString(line)
	if err != nil {
		return Origin{}, &errdefs.FilesystemError{Op: "read", Path: path, Reason: errdefs.ErrInvalidValue,
			Msg: "the clone origin file does not hold one scheme://host[:port] line as podbot writes it"}
	}
	return o, nil
}

// ReadOriginString reads an origin in the form Origin.String writes (as
// podbot stores it in a container label); anything else is an error.
func ReadOriginString(s string) (Origin, error) {
	o, err := ParseOrigin(s)
	if err != nil {
		return Origin{}, err
	}
	if o.String() != s {
		return Origin{}, &errdefs.ConfigError{Key: "github.clone_base_url", Reason: errdefs.ErrInvalidValue,
			Msg: "the origin " + s + " is not in canonical scheme://host[:port] form"}
	}
	return o, nil
}

// ReadToken reads the token, the first line of path (TokenPath in a
// sandbox).
func ReadToken(path string) (string, error) {
	return firstLine(path, "GitHub token")
}

func firstLine(path, what string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", &errdefs.FilesystemError{Op: "open", Path: path, Msg: "cannot read the " + what + " file", Err: err}
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxFileLen+1))
	if err != nil {
		return "", &errdefs.FilesystemError{Op: "read", Path: path, Msg: "cannot read the " + what + " file", Err: err}
	}
	if len(b) > maxFileLen {
		return "", &errdefs.FilesystemError{Op: "read", Path: path, Reason: errdefs.ErrInvalidValue,
			Msg: "the " + what + " file is too long", Err: errors.New("file too long")}
	}
	line, _, _ := strings.Cut(string(b), "\n")
	line = strings.TrimSuffix(line, "\r")
	if line == "" {
		return "", &errdefs.FilesystemError{Op: "read", Path: path, Reason: errdefs.ErrInvalidValue,
			Msg: "the " + what + " file is empty"}
	}
	return line, nil
}
