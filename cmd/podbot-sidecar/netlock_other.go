//go:build !linux

package main

import (
	"errors"
	"net/netip"
)

// netlock needs Linux netlink.
func netlock([]netip.Addr) error { return errors.New("netlock is only supported on linux") }
