package sandbox

import (
	"cmp"
	"context"
	"fmt"
	"hash/fnv"
	"slices"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"

	"github.com/podbot/podbot/errdefs"
	"github.com/podbot/podbot/launchplan"
)

// CPU placement policies of ContainerOptions.CPUSet; anything else is a
// CPU list such as "0-1,3".
const (
	// CPUSetAuto pins a session container whose CPU limit is smaller than
	// the host to as many CPUs as the limit rounds up to, choosing the
	// CPUs the fewest running podbot containers are pinned to.
	CPUSetAuto = "auto"
	// CPUSetNone never pins: the container's processes may run on any CPU.
	CPUSetNone = "none"
)

// checkCPUSet validates a placement policy: auto, none, empty (auto) or a
// CPU list.
func checkCPUSet(v string) error {
	switch v {
	case "", CPUSetAuto, CPUSetNone:
		return nil
	}
	if _, err := launchplan.ParseCPUList(v); err != nil {
		return &errdefs.ConfigError{Key: "tools.cpuset", Reason: errdefs.ErrInvalidValue,
			Msg: fmt.Sprintf("got %q: %v; expected auto, none or a CPU list such as 0-1,3", v, err)}
	}
	return nil
}

// placement is where a new session container runs.
type placement struct {
	cpus string // CPU list, or "" for unpinned
	auto bool   // chosen by podbot rather than configured
}

// place decides the CPUs of a new session container. An auto placement
// that cannot see the host's CPUs or podbot's running containers, or that
// the engine refused before, leaves the container unpinned rather than
// failing the call.
func (r *engineRuntime) place(ctx context.Context, name string) placement {
	switch r.opts.CPUSet {
	case CPUSetNone:
		return placement{}
	case "", CPUSetAuto:
	default:
		return placement{cpus: r.opts.CPUSet}
	}
	if r.pinRefused.Load() {
		return placement{}
	}
	want := wholeCPUs(r.opts.NanoCPUs)
	avail := r.hostCPUs()
	if want <= 0 || want >= len(avail) {
		return placement{}
	}
	used, err := r.pinnedCPUs(ctx)
	if err != nil {
		return placement{}
	}
	return placement{cpus: launchplan.FormatCPUList(pickCPUs(avail, used, want, placementSeed(name))), auto: true}
}

// pinnedCPUs counts, per CPU, the running podbot containers pinned to it.
func (r *engineRuntime) pinnedCPUs(ctx context.Context) (map[int]int, error) {
	list, err := r.conn.API().ContainerList(ctx, container.ListOptions{
		Filters: filters.NewArgs(filters.Arg("label", launchplan.LabelCPUSet)),
	})
	if err != nil {
		return nil, err
	}
	used := map[int]int{}
	for _, c := range list {
		cpus, err := launchplan.ParseCPUList(c.Labels[launchplan.LabelCPUSet])
		if err != nil {
			continue // not podbot's to trust; it does not count
		}
		for _, cpu := range cpus {
			used[cpu]++
		}
	}
	return used, nil
}

// pickCPUs returns, sorted, the n CPUs of avail that the fewest containers
// are pinned to (used). Ties go to the CPU that comes first when avail is
// read round from position seed, so sessions started together by different
// podbot processes spread out instead of all taking the lowest CPU.
func pickCPUs(avail []int, used map[int]int, n int, seed uint32) []int {
	if n <= 0 || len(avail) == 0 {
		return nil
	}
	start := int(seed % uint32(len(avail)))
	order := make([]int, len(avail))
	for i := range order {
		order[i] = avail[(start+i)%len(avail)]
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(used[a], used[b]) })
	picked := order[:min(n, len(order))]
	slices.Sort(picked)
	return picked
}

// placementSeed derives the tie-break position from the container name.
func placementSeed(name string) uint32 {
	h := fnv.New32a()
	_, _ = h.Write([]byte(name))
	return h.Sum32()
}
