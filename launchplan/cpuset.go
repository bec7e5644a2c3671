package launchplan

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/podbot/podbot/errdefs"
)

// Bounds of a CPU list.
const (
	// MaxCPUID is the highest CPU number a CPU list may name.
	MaxCPUID = 4095
	// maxCPUListBytes bounds the text of a CPU list.
	maxCPUListBytes = 1024
)

// LabelCPUSet records the CPUs a container is pinned to (WithCPUSet), so the
// next placement can see which CPUs podbot's containers already hold.
const LabelCPUSet = "podbot.cpuset"

// ParseCPUList parses a CPU list in the kernel's cpuset format ("0-3,6",
// as in cpuset.cpus and the engines' --cpuset-cpus) into sorted, distinct
// CPU numbers. Empty input, an empty item, a reversed range and a CPU above
// MaxCPUID are refused.
func ParseCPUList(s string) ([]int, error) {
	if s == "" {
		return nil, errors.New("the CPU list is empty")
	}
	if len(s) > maxCPUListBytes {
		return nil, fmt.Errorf("the CPU list is longer than %d bytes", maxCPUListBytes)
	}
	var cpus []int
	for item := range strings.SplitSeq(s, ",") {
		lo, hi, isRange := strings.Cut(item, "-")
		first, err := cpuNumber(lo)
		if err != nil {
			return nil, fmt.Errorf("item %q: %w", item, err)
		}
		last := first
		if isRange {
			if last, err = cpuNumber(hi); err != nil {
				return nil, fmt.Errorf("item %q: %w", item, err)
			}
			if last < first {
				return nil, fmt.Errorf("item %q: the range runs backwards", item)
			}
		}
		for c := first; c <= last; c++ {
			cpus = append(cpus, c)
		}
	}
	slices.Sort(cpus)
	return slices.Compact(cpus), nil
}

// cpuNumber parses one CPU number: decimal digits only, at most MaxCPUID.
func cpuNumber(s string) (int, error) {
	if s == "" || len(s) > 4 || strings.TrimLeft(s, "0123456789") != "" {
		return 0, fmt.Errorf("expected a CPU number from 0 to %d", MaxCPUID)
	}
	n, _ := strconv.Atoi(s)
	if n > MaxCPUID {
		return 0, fmt.Errorf("CPU %d is above %d", n, MaxCPUID)
	}
	return n, nil
}

// FormatCPUList writes sorted, distinct CPU numbers as a CPU list, runs of
// consecutive CPUs as ranges ("0-3,6").
func FormatCPUList(cpus []int) string {
	var b strings.Builder
	for i := 0; i < len(cpus); {
		j := i
		for j+1 < len(cpus) && cpus[j+1] == cpus[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(cpus[i]))
		if j > i {
			b.WriteByte('-')
			b.WriteString(strconv.Itoa(cpus[j]))
		}
		i = j + 1
	}
	return b.String()
}

// WithCPUSet pins the container to the CPUs of list (a CPU list such as
// "0-1"): its processes run on those CPUs alone, and programs that size
// themselves by the CPUs they may use (nproc, os.cpu_count) see that many.
// The list is recorded, normalised, in the LabelCPUSet label. Empty leaves
// the container unpinned.
func WithCPUSet(list string) Option {
	return func(p *Plan) error {
		if list == "" {
			p.Resources.CPUSet = ""
			delete(p.Labels, LabelCPUSet)
			return nil
		}
		cpus, err := ParseCPUList(list)
		if err != nil {
			return configError("cpuset", errdefs.ErrInvalidValue, "CPU list %q: %v; expected CPU numbers and ranges such as 0-1,3", list, err)
		}
		p.Resources.CPUSet = FormatCPUList(cpus)
		if p.Labels == nil {
			p.Labels = map[string]string{}
		}
		p.Labels[LabelCPUSet] = p.Resources.CPUSet
		return nil
	}
}
