package tools

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"os"
	"path"
)

// openText opens rel for reading after checking it is a regular text file.
// It also returns the file's size when it was opened.
func (w *Workspace) openText(ctx context.Context, tool, param, rel string) (*os.File, int64, error) {
	if err := ctx.Err(); err != nil {
		return nil, 0, err
	}
	f, err := w.openRead(rel)
	if err != nil {
		return nil, 0, w.fsError(tool, param, rel, err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, w.fsError(tool, param, rel, err)
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, 0, notRegular(tool, param, rel, st.Mode())
	}
	sample := make([]byte, sizedBuffer(st.Size(), BinarySniffBytes))
	n, err := io.ReadFull(f, sample)
	if err != nil && err != io.ErrUnexpectedEOF && err != io.EOF {
		f.Close()
		return nil, 0, w.fsError(tool, param, rel, err)
	}
	if looksBinary(sample[:n]) {
		f.Close()
		return nil, 0, binaryRefused(tool, param, rel)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		f.Close()
		return nil, 0, w.fsError(tool, param, rel, err)
	}
	return f, st.Size(), nil
}

// openRead opens rel for reading without waiting on a FIFO or device
// (openNoWait); callers check the type with f.Stat on the descriptor.
func (w *Workspace) openRead(rel string) (*os.File, error) {
	return w.root.OpenFile(rel, os.O_RDONLY|openNoWait, 0)
}

// minBuffer is the smallest read buffer sizedBuffer returns.
const minBuffer = 512

// sizedBuffer is the size of a buffer for reading a file of size bytes:
// one byte more than the file (so a read sees its end at once), at least
// minBuffer (the file may grow) and at most max. Small files, the usual
// case, then cost a small allocation instead of max bytes.
func sizedBuffer(size int64, max int) int {
	if size < 0 || size >= int64(max) {
		return max
	}
	return int(min(int64(max), size+1+minBuffer))
}

// replaceFile atomically replaces rel with data, keeping its permissions:
// the data goes to a temporary sibling that is renamed over rel.
func (w *Workspace) replaceFile(tool, param, rel string, data []byte, perm os.FileMode) error {
	var suffix [6]byte
	_, _ = rand.Read(suffix[:])
	tmp := path.Join(path.Dir(rel), ".podbot-"+hex.EncodeToString(suffix[:])+".tmp")
	f, err := w.root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return w.fsError(tool, param, rel, err)
	}
	_, werr := f.Write(data)
	cerr := f.Close()
	if werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = w.root.Chmod(tmp, perm)
	}
	if werr == nil {
		werr = w.root.Rename(tmp, rel)
	}
	if werr != nil {
		_ = w.root.Remove(tmp)
		return w.fsError(tool, param, rel, werr)
	}
	return nil
}
