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
func (w *Workspace) openText(ctx context.Context, tool, param, rel string) (*os.File, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	f, err := w.root.Open(rel)
	if err != nil {
		return nil, w.fsError(tool, param, rel, err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, w.fsError(tool, param, rel, err)
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, notRegular(tool, param, rel, st.Mode())
	}
	sample := make([]byte, BinarySniffBytes)
	n, err := io.ReadFull(f, sample)
	if err != nil && err != io.ErrUnexpectedEOF && err != io.EOF {
		f.Close()
		return nil, w.fsError(tool, param, rel, err)
	}
	if looksBinary(sample[:n]) {
		f.Close()
		return nil, binaryRefused(tool, param, rel)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		f.Close()
		return nil, w.fsError(tool, param, rel, err)
	}
	return f, nil
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
