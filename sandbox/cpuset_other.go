//go:build !linux

package sandbox

// availableCPUs is nil where the engine runs in a virtual machine whose
// CPUs podbot cannot see: session containers are not pinned automatically.
func availableCPUs() []int { return nil }
