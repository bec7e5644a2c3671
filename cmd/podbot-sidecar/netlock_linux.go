package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"

	"golang.org/x/sys/unix"
)

// netlock closes a sandbox's network namespace down to its own subnet: it
// deletes every IPv4 default route and adds a prohibit route for each
// blocked address (the engine host's address on the sandbox's internal
// network, through which the host's own services and the engine's DNS
// forwarder would answer). It runs in a short-lived helper container that
// shares the sandbox's network namespace and alone holds CAP_NET_ADMIN;
// the sandbox, without that capability, cannot put the routes back.
func netlock(blocked []netip.Addr) error {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_ROUTE)
	if err != nil {
		return fmt.Errorf("netlink socket: %w", err)
	}
	defer unix.Close(fd)
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return fmt.Errorf("netlink bind: %w", err)
	}
	seq := uint32(1)
	// Delete default routes until there is none left (ESRCH).
	for i := 0; i < 16; i++ {
		err := routeRequest(fd, seq, unix.RTM_DELROUTE, 0, unix.RTN_UNSPEC, netip.Addr{})
		seq++
		if errors.Is(err, unix.ESRCH) {
			break
		}
		if err != nil {
			return fmt.Errorf("delete the default route: %w", err)
		}
	}
	for _, a := range blocked {
		if !a.Is4() {
			return fmt.Errorf("netlock: %s is not an IPv4 address", a)
		}
		err := routeRequest(fd, seq, unix.RTM_NEWROUTE, unix.NLM_F_CREATE|unix.NLM_F_REPLACE, unix.RTN_PROHIBIT, a)
		seq++
		if err != nil {
			return fmt.Errorf("block %s: %w", a, err)
		}
	}
	return nil
}

// routeRequest sends one route message (a /32 for dst, or the default
// route for the zero Addr) in the main table and waits for its ack.
func routeRequest(fd int, seq uint32, typ uint16, flags uint16, rtype uint8, dst netip.Addr) error {
	rt := unix.RtMsg{Family: unix.AF_INET, Table: unix.RT_TABLE_MAIN, Scope: unix.RT_SCOPE_NOWHERE, Type: rtype}
	if typ == unix.RTM_NEWROUTE {
		rt.Protocol = unix.RTPROT_BOOT
		rt.Scope = unix.RT_SCOPE_UNIVERSE
	}
	var attr []byte
	if dst.IsValid() {
		rt.Dst_len = 32
		a := dst.As4()
		attr = make([]byte, unix.SizeofRtAttr+4)
		binary.NativeEndian.PutUint16(attr[0:], uint16(unix.SizeofRtAttr+4))
		binary.NativeEndian.PutUint16(attr[2:], unix.RTA_DST)
		copy(attr[unix.SizeofRtAttr:], a[:])
	}
	n := unix.SizeofNlMsghdr + unix.SizeofRtMsg + len(attr)
	b := make([]byte, n)
	ne := binary.NativeEndian
	ne.PutUint32(b[0:], uint32(n))
	ne.PutUint16(b[4:], typ)
	ne.PutUint16(b[6:], unix.NLM_F_REQUEST|unix.NLM_F_ACK|flags)
	ne.PutUint32(b[8:], seq)
	o := unix.SizeofNlMsghdr
	b[o], b[o+1], b[o+2], b[o+3] = rt.Family, rt.Dst_len, rt.Src_len, rt.Tos
	b[o+4], b[o+5], b[o+6], b[o+7] = rt.Table, rt.Protocol, rt.Scope, rt.Type
	ne.PutUint32(b[o+8:], rt.Flags)
	copy(b[o+unix.SizeofRtMsg:], attr)
	if err := unix.Sendto(fd, b, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return err
	}
	buf := make([]byte, 4096)
	for {
		m, _, err := unix.Recvfrom(fd, buf, 0)
		if err != nil {
			return err
		}
		msgs, err := parseNetlink(buf[:m])
		if err != nil {
			return err
		}
		for _, msg := range msgs {
			if msg.seq != seq || msg.typ != unix.NLMSG_ERROR {
				continue
			}
			if msg.errno == 0 {
				return nil
			}
			return unix.Errno(msg.errno)
		}
	}
}

type nlAck struct {
	typ   uint16
	seq   uint32
	errno int32 // positive errno from an NLMSG_ERROR, 0 for an ack
}

// parseNetlink reads the headers (and error codes) of the messages in b.
func parseNetlink(b []byte) ([]nlAck, error) {
	var out []nlAck
	ne := binary.NativeEndian
	for len(b) >= unix.SizeofNlMsghdr {
		l := int(ne.Uint32(b[0:]))
		if l < unix.SizeofNlMsghdr || l > len(b) {
			return nil, errors.New("netlink: malformed message")
		}
		a := nlAck{typ: ne.Uint16(b[4:]), seq: ne.Uint32(b[8:])}
		if a.typ == unix.NLMSG_ERROR && l >= unix.SizeofNlMsghdr+4 {
			a.errno = -int32(ne.Uint32(b[unix.SizeofNlMsghdr:]))
		}
		out = append(out, a)
		l = (l + unix.NLMSG_ALIGNTO - 1) &^ (unix.NLMSG_ALIGNTO - 1)
		if l > len(b) {
			break
		}
		b = b[l:]
	}
	return out, nil
}
