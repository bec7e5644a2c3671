package main

import (
	"bytes"
	"encoding/binary"
	"errors"
	"flag"
	"io"
	"testing"

	"golang.org/x/sys/unix"
)

func TestParseNetlock(t *testing.T) {
	got, err := parseNetlock([]string{"--block", "10.89.0.1", "--block=172.18.0.1"}, io.Discard)
	if err != nil || len(got) != 2 || got[0].String() != "10.89.0.1" || got[1].String() != "172.18.0.1" {
		t.Fatalf("parseNetlock = %v, %v", got, err)
	}
	for _, bad := range [][]string{{"--block", "fe80::1"}, {"--block", "nope"}, {"extra"}, {"--block"}} {
		if _, err := parseNetlock(bad, io.Discard); !errors.Is(err, errUsage) {
			t.Errorf("parseNetlock(%v) = %v, want a usage error", bad, err)
		}
	}
	if _, err := parseNetlock([]string{"-h"}, io.Discard); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("-h = %v", err)
	}
}

func nlmsg(typ uint16, seq uint32, errno int32) []byte {
	b := make([]byte, unix.SizeofNlMsghdr+4)
	ne := binary.NativeEndian
	ne.PutUint32(b[0:], uint32(len(b)))
	ne.PutUint16(b[4:], typ)
	ne.PutUint32(b[8:], seq)
	ne.PutUint32(b[unix.SizeofNlMsghdr:], uint32(-errno))
	return b
}

func TestParseNetlinkAcks(t *testing.T) {
	b := append(nlmsg(unix.NLMSG_ERROR, 7, 0), nlmsg(unix.NLMSG_ERROR, 8, int32(unix.ESRCH))...)
	got, err := parseNetlink(b)
	if err != nil || len(got) != 2 || got[0].seq != 7 || got[0].errno != 0 || got[1].errno != int32(unix.ESRCH) {
		t.Fatalf("parseNetlink = %+v, %v", got, err)
	}
	if _, err := parseNetlink([]byte{200, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}); err == nil {
		t.Fatal("a length past the buffer was accepted")
	}
}

// FuzzParseNetlink: whatever the kernel (or anything) answers, the parser
// neither panics nor loops.
func FuzzParseNetlink(f *testing.F) {
	f.Add(nlmsg(unix.NLMSG_ERROR, 1, 0))
	f.Add(append(nlmsg(unix.NLMSG_ERROR, 1, 3), nlmsg(unix.NLMSG_DONE, 2, 0)...))
	f.Add(bytes.Repeat([]byte{0xff}, 40))
	f.Add([]byte{16, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		msgs, err := parseNetlink(b)
		if err == nil && len(msgs) > len(b)/unix.SizeofNlMsghdr {
			t.Fatalf("%d messages from %d bytes", len(msgs), len(b))
		}
	})
}
