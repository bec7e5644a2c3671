package main

import (
	"time"

	"github.com/spf13/pflag"

	"github.com/podbot/podbot"
)

// poolFlags are --pool and --wait of podbot run and podbot host.
type poolFlags struct {
	name string
	wait time.Duration
}

// register adds --pool and --wait to fl.
func (p *poolFlags) register(fl *pflag.FlagSet) {
	fl.StringVar(&p.name, "pool", "", "claim a ready sandbox from agent pool `NAME` (see podbot pool); an empty pool launches cold from the pool's template")
	fl.DurationVar(&p.wait, "wait", 0, "with --pool: wait up to `DURATION` for a ready member before launching cold")
}

// check refuses --wait without --pool or with a negative duration.
func (p *poolFlags) check() error {
	if p.wait < 0 || (p.wait > 0 && p.name == "") {
		return &usageError{msg: "--wait needs --pool and a positive duration such as 5s"}
	}
	return nil
}

// apply resolves the pool (podbot pool create's record or [[pools]]) into
// the launch's options.
func (p *poolFlags) apply(f *factory, lo *podbot.LaunchOptions) error {
	if p.name == "" {
		return nil
	}
	spec, err := f.poolSpec(p.name)
	if err != nil {
		return err
	}
	lo.Pool, lo.PoolWait = &spec, p.wait
	return nil
}
