//go:build linux

package sandbox

import "golang.org/x/sys/unix"

// availableCPUs lists the CPUs this process may run on. podbot mounts its
// own sidecar binary into every session, so the engine runs on this host
// and these are the CPUs its containers can be pinned to.
func availableCPUs() []int {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil
	}
	var cpus []int
	for i := 0; len(cpus) < set.Count(); i++ {
		if set.IsSet(i) {
			cpus = append(cpus, i)
		}
	}
	return cpus
}
