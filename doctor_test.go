package podbot

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/podbot/podbot/config"
	"github.com/podbot/podbot/errdefs"
)

type fakeDevice struct{}

func (fakeDevice) Name() string       { return "fuse" }
func (fakeDevice) Size() int64        { return 0 }
func (fakeDevice) Mode() fs.FileMode  { return fs.ModeDevice | fs.ModeCharDevice | 0o666 }
func (fakeDevice) ModTime() time.Time { return time.Time{} }
func (fakeDevice) IsDir() bool        { return false }
func (fakeDevice) Sys() any           { return nil }

func TestDoctorWithoutEngine(t *testing.T) {
	probe := HostProbe{
		Stat: func(string) (os.FileInfo, error) { return nil, fs.ErrNotExist },
		ReadFile: func(p string) ([]byte, error) {
			if p == "/proc/sys/user/max_user_namespaces" {
				return []byte("0\n"), nil
			}
			return nil, fs.ErrNotExist
		},
	}
	r := Doctor(context.Background(), DoctorOptions{
		Config:      &config.Loaded{Config: config.Default(), Sources: map[string]string{"image": "PODBOT_IMAGE"}},
		EndpointErr: &errdefs.ContainerError{Op: "resolve", Reason: errdefs.ErrNotFound, Msg: "no engine socket found"},
		Host:        probe,
	})
	want := map[string]CheckStatus{
		"config":          CheckOK,
		"engine endpoint": CheckFail,
		"sidecar":         CheckWarn,
		"/dev/fuse":       CheckWarn,
		"user namespaces": CheckWarn,
		"inotify":         CheckWarn,
	}
	got := map[string]CheckStatus{}
	for _, c := range r.Checks {
		got[c.Name] = c.Status
		if c.Status != CheckOK && c.Fix == "" && c.Name != "user namespaces" {
			t.Errorf("check %s is %s without a fix", c.Name, c.Status)
		}
	}
	for name, st := range want {
		if got[name] != st {
			t.Errorf("check %q = %q, want %q (all: %+v)", name, got[name], st, r.Checks)
		}
	}
	if !r.Failed() {
		t.Error("report with a failed check says it did not fail")
	}
}

func TestDoctorInotifyLimits(t *testing.T) {
	tests := []struct {
		watches, instances string
		want               CheckStatus
	}{
		{"524288\n", "128\n", CheckOK},
		{"8192\n", "128\n", CheckWarn},
		{"524288\n", "8\n", CheckWarn},
		{"", "128\n", CheckWarn}, // unreadable
	}
	for _, tt := range tests {
		h := HostProbe{ReadFile: func(p string) ([]byte, error) {
			switch {
			case strings.HasSuffix(p, "max_user_watches") && tt.watches != "":
				return []byte(tt.watches), nil
			case strings.HasSuffix(p, "max_user_instances"):
				return []byte(tt.instances), nil
			}
			return nil, fs.ErrNotExist
		}}
		var got []Check
		doctorInotify(h, func(name string, st CheckStatus, detail, fix string) {
			got = append(got, Check{Name: name, Status: st, Detail: detail, Fix: fix})
		})
		if len(got) != 1 || got[0].Name != "inotify" || got[0].Status != tt.want || (tt.want != CheckOK && got[0].Fix == "") {
			t.Errorf("watches %q instances %q: %+v, want %s", tt.watches, tt.instances, got, tt.want)
		}
	}
}

func TestDoctorConfigErrorIsReported(t *testing.T) {
	cfgErr := &errdefs.ConfigError{Key: "sandbox.privileged", Source: "PODBOT_SANDBOX_PRIVILEGED", Reason: errdefs.ErrInvalidValue, Msg: "expected true or false"}
	r := Doctor(context.Background(), DoctorOptions{ConfigErr: cfgErr, EndpointErr: errors.New("not resolved"),
		Host: HostProbe{Stat: func(string) (os.FileInfo, error) { return fakeDevice{}, nil },
			ReadFile: func(string) ([]byte, error) { return []byte("100"), nil }}})
	if r.Checks[0].Name != "config" || r.Checks[0].Status != CheckFail || !strings.Contains(r.Checks[0].Detail, "sandbox.privileged") {
		t.Fatalf("first check %+v", r.Checks[0])
	}
}

func TestBoundingCap(t *testing.T) {
	status := "Name:\tx\nCapBnd:\t000001fffeffffff\n"
	h := HostProbe{ReadFile: func(string) ([]byte, error) { return []byte(status), nil }}
	if has, ok := boundingCap(h, capSysResource); !ok || has {
		t.Errorf("CAP_SYS_RESOURCE: has=%v ok=%v, want false true", has, ok)
	}
	if has, ok := boundingCap(h, 0); !ok || !has {
		t.Errorf("CAP_CHOWN: has=%v ok=%v", has, ok)
	}
}
