package hostflow

import (
	"errors"
	"testing"

	"github.com/podbot/podbot/acp"
	"github.com/podbot/podbot/config"
	"github.com/podbot/podbot/errdefs"
)

func TestPolicyFor(t *testing.T) {
	tests := []struct {
		name    string
		agent   config.Agent
		frame   config.ByteSize
		want    acp.Policy
		wantErr string // config key of the error, "" for none
	}{
		{"acp", config.Agent{Mode: config.ModeACP}, 32 << 20,
			acp.Policy{Mode: acp.ModeACP, MaxFrameBytes: 32 << 20}, ""},
		{"acp with delegation", config.Agent{Mode: config.ModeACP, AllowHostDelegation: true}, 1 << 10,
			acp.Policy{Mode: acp.ModeACP, AllowHostDelegation: true, MaxFrameBytes: 1 << 10}, ""},
		{"acp with terminal auth", config.Agent{Mode: config.ModeACP, AllowTerminalAuth: true}, 1 << 10,
			acp.Policy{Mode: acp.ModeACP, AllowTerminalAuth: true, MaxFrameBytes: 1 << 10}, ""},
		{"codex blocking dynamic tools", config.Agent{Mode: config.ModeCodexAppServer, CodexBlockDynamicTools: true}, 0,
			acp.Policy{Mode: acp.ModeCodexAppServer, CodexBlockDynamicTools: true}, ""},
		{"interactive mode", config.Agent{Mode: config.ModePodbot}, 0, acp.Policy{}, "agent.mode"},
		{"frame limit too large", config.Agent{Mode: config.ModeACP}, 2 << 30, acp.Policy{}, "acp.max_frame_bytes"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var cfg config.Config
			cfg.Agent = tc.agent
			cfg.ACP.MaxFrameBytes = tc.frame
			got, err := PolicyFor(cfg, nil)
			if tc.wantErr != "" {
				var ce *errdefs.ConfigError
				if !errors.As(err, &ce) || ce.Key != tc.wantErr {
					t.Fatalf("err = %v, want a ConfigError for %s", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("policy %+v, want %+v", got, tc.want)
			}
		})
	}
}
