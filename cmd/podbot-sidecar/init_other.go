//go:build !unix

package main

import (
	"context"
	"errors"
)

// initLoop is only meaningful as a Linux container's PID 1.
func initLoop(context.Context, []string) error {
	return errors.New("init is only supported on unix")
}
