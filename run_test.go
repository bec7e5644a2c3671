package podbot

import (
	"context"
	"errors"
	"testing"

	"github.com/podbot/podbot/config"
	"github.com/podbot/podbot/errdefs"
)

// Run refuses a configuration without an agent before it makes anything,
// naming the step and the key.
func TestRunNeedsAnAgent(t *testing.T) {
	cfg := config.Default()
	cfg.Agent.Kind = ""
	_, err := Run(context.Background(), nil, RunOptions{Launch: LaunchOptions{Config: cfg}})
	var step *StepError
	if !errors.As(err, &step) || step.Step != StepPlan {
		t.Fatalf("err = %v, want a StepError for step %q", err, StepPlan)
	}
	var ce *errdefs.ConfigError
	if !errors.As(err, &ce) || ce.Key != "agent.kind" || !errors.Is(err, errdefs.ErrMissingRequired) {
		t.Errorf("err = %v, want a missing agent.kind ConfigError", err)
	}
}
