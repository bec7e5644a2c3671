// Command k8spause is the pause process of the test cluster's Pod sandboxes
// (scripts/k8s.sh): it holds a Pod's namespaces open, reaps the orphans the
// kernel hands it as PID 1, and exits on SIGINT or SIGTERM. The cluster has no
// registry, so scripts/k8s.sh builds it and imports it into containerd as the
// sandbox image.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for sig := range sigs {
		if sig != syscall.SIGCHLD {
			os.Exit(0)
		}
		reap()
	}
}

// reap collects every child that has exited, without blocking.
func reap() {
	for {
		var status syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &status, syscall.WNOHANG, nil)
		if pid <= 0 || err != nil {
			return
		}
	}
}
