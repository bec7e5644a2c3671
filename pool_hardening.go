package podbot

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"

	"github.com/podbot/podbot/launchplan"
)

// LabelPoolHardening is the label an agent pool member carries with the
// security-relevant part of the plan it was made from (image, user, init,
// privileges, capabilities, devices, limits, network, egress mode,
// the allowlist proxy's upstream CA, tmpfs and mounts), as JSON. A launch claiming the member compares it with
// the plan a cold launch would make and refuses a member that differs.
const LabelPoolHardening = "podbot.pool.hardening"

// tokenDirSource stands for a GitHub token directory's host path in a
// hardening record.
const tokenDirSource = "$XDG_RUNTIME_DIR/podbot/<token directory>"

// maxHardeningLabel bounds the label podbot reads back from a member.
const maxHardeningLabel = 16 << 10

// hardening is the part of a plan that a claimed member must share with a
// cold launch: everything that decides what the sandbox may do and reach.
// Labels, environment, working directory and the agent are per launch and
// left out (the agent's environment goes to its exec).
type hardening struct {
	Image           string               `json:"image"`
	User            string               `json:"user"`
	Init            []string             `json:"init"`
	Privileged      bool                 `json:"privileged"`
	NoNewPrivileges bool                 `json:"no_new_privileges"`
	CapDropAll      bool                 `json:"cap_drop_all"`
	CapAdd          []string             `json:"cap_add"`
	LabelDisable    bool                 `json:"label_disable"`
	ReadOnlyRootfs  bool                 `json:"read_only_rootfs"`
	Devices         []launchplan.Device  `json:"devices"`
	GPUs            []string             `json:"gpus"`
	Resources       launchplan.Resources `json:"resources"`
	Network         string               `json:"network"`
	Egress          string               `json:"egress"`
	UpstreamCA      string               `json:"upstream_ca,omitempty"`
	Tmpfs           map[string]string    `json:"tmpfs"`
	Mounts          []hardeningMount     `json:"mounts"`
}

// hardeningMount is a bind mount without the configuration key it came from.
type hardeningMount struct {
	Source   string `json:"source"`
	Target   string `json:"target"`
	ReadOnly bool   `json:"read_only"`
}

// hardeningOf extracts p's hardening, in a canonical order.
func hardeningOf(p launchplan.Plan) hardening {
	h := hardening{
		Image: p.Image, User: p.User, Init: slices.Clone(p.InitCommand),
		Privileged: p.Security.Privileged, NoNewPrivileges: p.Security.NoNewPrivileges,
		CapDropAll: p.Security.CapDropAll, CapAdd: slices.Sorted(slices.Values(p.Security.CapAdd)),
		LabelDisable: p.Security.LabelDisable, ReadOnlyRootfs: p.Security.ReadOnlyRootfs,
		Devices: slices.Clone(p.Security.Devices), GPUs: slices.Sorted(slices.Values(p.Security.GPUs)),
		Resources: p.Resources, Network: p.Network, Egress: string(p.Egress.Mode), UpstreamCA: p.Egress.UpstreamCA, Tmpfs: p.Tmpfs,
	}
	for _, m := range p.Mounts {
		src := m.Source
		if m.Target == launchplan.TokenMountTarget {
			// The token directory is named after the sandbox (a member's
			// after the member): compared by where it is mounted and how.
			src = tokenDirSource
		}
		h.Mounts = append(h.Mounts, hardeningMount{Source: src, Target: m.Target, ReadOnly: m.ReadOnly})
	}
	slices.SortFunc(h.Mounts, func(a, b hardeningMount) int { return strings.Compare(a.Target, b.Target) })
	return h
}

// label is h as the value of LabelPoolHardening.
func (h hardening) label() string {
	b, err := json.Marshal(h)
	if err != nil {
		return "" // not reached: every field marshals
	}
	return string(b)
}

// parseHardening reads a member's LabelPoolHardening value.
func parseHardening(v string) (hardening, bool) {
	var h hardening
	if v == "" || len(v) > maxHardeningLabel || json.Unmarshal([]byte(v), &h) != nil {
		return hardening{}, false
	}
	return h, true
}

// differences names the fields (by their JSON keys) in which got differs
// from want, in a fixed order.
func (want hardening) differences(got hardening) []string {
	var out []string
	wv, gv := reflect.ValueOf(want), reflect.ValueOf(got)
	t := wv.Type()
	for i := range t.NumField() {
		a, b := wv.Field(i).Interface(), gv.Field(i).Interface()
		if !reflect.DeepEqual(normalizeEmpty(a), normalizeEmpty(b)) {
			key, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
			out = append(out, key)
		}
	}
	return out
}

// normalizeEmpty makes an empty slice or map compare equal to a nil one
// (JSON turns nil into null and empty into [] or {}).
func normalizeEmpty(v any) any {
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Slice, reflect.Map:
		if rv.Len() == 0 {
			return nil
		}
	}
	return v
}
