package launchplan

import (
	"errors"
	"slices"
	"testing"

	"github.com/podbot/podbot/errdefs"
)

func TestParseCPUList(t *testing.T) {
	good := []struct {
		in   string
		want []int
	}{
		{"0", []int{0}},
		{"0-3,6", []int{0, 1, 2, 3, 6}},
		{"3,1,1-2", []int{1, 2, 3}},
		{"7-7", []int{7}},
		{"4095", []int{4095}},
	}
	for _, tt := range good {
		got, err := ParseCPUList(tt.in)
		if err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("ParseCPUList(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
	for _, in := range []string{"", ",", "1,", "-1", "3-1", "a", "4096", "1-2-3", " 1", "1 ", "0x1", "+1", "99999"} {
		if got, err := ParseCPUList(in); err == nil {
			t.Errorf("ParseCPUList(%q) = %v, want an error", in, got)
		}
	}
}

func TestFormatCPUList(t *testing.T) {
	tests := []struct {
		in   []int
		want string
	}{
		{nil, ""}, {[]int{2}, "2"}, {[]int{0, 1, 2, 3, 6}, "0-3,6"}, {[]int{0, 2, 4}, "0,2,4"}, {[]int{5, 6}, "5-6"},
	}
	for _, tt := range tests {
		if got := FormatCPUList(tt.in); got != tt.want {
			t.Errorf("FormatCPUList(%v) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestWithCPUSet(t *testing.T) {
	p := Plan{}
	if err := p.Apply(WithCPUSet("1,0")); err != nil {
		t.Fatal(err)
	}
	if p.Resources.CPUSet != "0-1" || p.Labels[LabelCPUSet] != "0-1" {
		t.Errorf("resources %+v labels %v", p.Resources, p.Labels)
	}
	if _, hc, _ := p.Render(); hc.CpusetCpus != "0-1" {
		t.Errorf("rendered CpusetCpus = %q", hc.CpusetCpus)
	}
	if err := p.Apply(WithCPUSet("")); err != nil || p.Resources.CPUSet != "" || p.Labels[LabelCPUSet] != "" {
		t.Errorf("empty list: err %v resources %+v labels %v", err, p.Resources, p.Labels)
	}
	err := p.Apply(WithCPUSet("2-1"))
	var ce *errdefs.ConfigError
	if !errors.As(err, &ce) || !errors.Is(err, errdefs.ErrInvalidValue) || ce.Key != "cpuset" {
		t.Errorf("reversed range: %v", err)
	}
}

// FuzzParseCPUList checks that whatever parses formats back to a list that
// parses to the same CPUs, all within bounds.
func FuzzParseCPUList(f *testing.F) {
	for _, s := range []string{"0", "0-3,6", "3,1,1-2", "4095", "1-2-3", ",", "0-4095"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		cpus, err := ParseCPUList(s)
		if err != nil {
			return
		}
		if len(cpus) == 0 || !slices.IsSorted(cpus) || cpus[0] < 0 || cpus[len(cpus)-1] > MaxCPUID {
			t.Fatalf("ParseCPUList(%q) = %v", s, cpus)
		}
		again, err := ParseCPUList(FormatCPUList(cpus))
		if err != nil || !slices.Equal(again, cpus) {
			t.Fatalf("round trip of %q: %v, %v", s, again, err)
		}
	})
}
