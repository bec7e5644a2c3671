package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/podbot/podbot"
	"github.com/podbot/podbot/errdefs"
)

// reviewOptions are the flags podbot diff, log, fetch and apply share.
type reviewOptions struct {
	repo     string
	stat     bool
	json     bool
	snapshot bool
	squash   bool
	rebase   bool
}

// reviewHelp is the shared part of the review commands' help.
const reviewHelp = `The sandbox must have been made from this repository with --repo PATH
(run the command inside it, or pass --repo PATH) and be running. Its work
comes back as a git bundle through the engine, or a pods/exec stream on
the kubernetes backend (no network, no mount), and
is untrusted: the bundle's header is parsed with bounds, only the
sandbox's own branch is taken (other refs are ignored and named), its
objects are checked with git index-pack --strict in a quarantine
repository, and host git runs with hooks and fsmonitor off. Output is
printed with terminal escape sequences neutralised.`

// openReview resolves --repo (default: the current directory) and opens
// the sandbox.
func openReview(ctx context.Context, f *factory, ref string, o *reviewOptions) (*podbot.Review, error) {
	repo := o.repo
	if repo == "" {
		repo = "."
	}
	abs, err := filepath.Abs(repo)
	if err != nil {
		return nil, &errdefs.FilesystemError{Op: "resolve", Path: repo, Err: err}
	}
	onKube, err := f.onKubernetes()
	if err != nil {
		return nil, err
	}
	if onKube {
		return openKubeReview(ctx, f, ref, abs)
	}
	conn, err := f.engine(ctx)
	if err != nil {
		return nil, err
	}
	return podbot.OpenReview(ctx, conn, ref, abs, f.environ)
}

// noteIgnored tells the user about refs the sandbox offered and podbot
// ignored.
func noteIgnored(f *factory, r *podbot.Review) {
	if len(r.Ignored) > 0 && !f.global.quiet {
		fmt.Fprintf(f.ios.ErrOut, "podbot: ignored %d ref(s) the sandbox offered besides its branch: %s\n", len(r.Ignored), strings.Join(r.Ignored, ", "))
	}
}

func newReviewCmd(f *factory, use, short, long, example string, run func(ctx context.Context, r *podbot.Review, o *reviewOptions) error, flags func(o *reviewOptions, cmd *cobra.Command)) *cobra.Command {
	o := &reviewOptions{}
	cmd := &cobra.Command{
		Use:     use,
		Short:   short,
		Long:    long + "\n\n" + reviewHelp,
		Example: example,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.squash && o.rebase {
				return &usageError{msg: "--squash and --rebase both choose how to apply: pick one"}
			}
			r, err := openReview(cmd.Context(), f, args[0], o)
			if err != nil {
				return err
			}
			if err := run(cmd.Context(), r, o); err != nil {
				return err
			}
			noteIgnored(f, r)
			return nil
		},
	}
	cmd.Flags().StringVar(&o.repo, "repo", "", "host repository `PATH` the sandbox was made from (default: the current directory)")
	if flags != nil {
		flags(o, cmd)
	}
	return cmd
}

func newDiffCmd(f *factory) *cobra.Command {
	return newReviewCmd(f, "diff NAME [--stat] [--json]", "Show a sandbox's changes against the commit it started from",
		`Print the changes in sandbox NAME's copy of this repository against its
base commit, committed and uncommitted (untracked files included, ignored
ones not), as a unified diff. Nothing changes in the sandbox's branch,
index or work tree, nor in the host repository.`,
		`  podbot diff fix-1
  podbot diff fix-1 --stat
  podbot diff fix-1 --json | jq -r '.files[].path'`,
		func(ctx context.Context, r *podbot.Review, o *reviewOptions) error {
			if o.json {
				res, err := r.DiffJSON(ctx)
				if err != nil {
					return err
				}
				return writeJSON(f.ios.Out, res)
			}
			return r.Diff(ctx, f.ios.Out, podbot.DiffOptions{Stat: o.stat})
		},
		func(o *reviewOptions, cmd *cobra.Command) {
			cmd.Flags().BoolVar(&o.stat, "stat", false, "print a diffstat instead of the patch")
			cmd.Flags().BoolVar(&o.json, "json", false, "print JSON: files with line counts, and the patch")
		})
}

func newLogCmd(f *factory) *cobra.Command {
	return newReviewCmd(f, "log NAME", "Show the commits on a sandbox's branch",
		`Print the commits on sandbox NAME's branch podbot/NAME since its base commit.`,
		`  podbot log fix-1`,
		func(ctx context.Context, r *podbot.Review, _ *reviewOptions) error {
			return r.Log(ctx, f.ios.Out)
		}, nil)
}

func newFetchCmd(f *factory) *cobra.Command {
	return newReviewCmd(f, "fetch NAME [--snapshot]", "Bring a sandbox's branch into this repository",
		`Bring sandbox NAME's branch into this repository as the local branch
podbot/NAME (refs/heads/podbot/NAME, replaced if it exists). With
--snapshot, uncommitted work in the sandbox is first committed on its
branch there. Only that branch is taken.`,
		`  podbot fetch fix-1
  podbot fetch fix-1 --snapshot && git log podbot/fix-1`,
		func(ctx context.Context, r *podbot.Review, o *reviewOptions) error {
			res, err := r.Fetch(ctx, o.snapshot)
			if err != nil {
				return err
			}
			if o.json {
				return writeJSON(f.ios.Out, res)
			}
			fmt.Fprintf(f.ios.Out, "%s %s (%d commit(s) since the base)\n", strings.TrimPrefix(res.Ref, "refs/heads/"), res.Tip, res.Commits)
			return nil
		},
		func(o *reviewOptions, cmd *cobra.Command) {
			cmd.Flags().BoolVar(&o.snapshot, "snapshot", false, "commit the sandbox's uncommitted work on its branch first")
			cmd.Flags().BoolVar(&o.json, "json", false, "print JSON")
		})
}

func newApplyCmd(f *factory) *cobra.Command {
	return newReviewCmd(f, "apply NAME [--squash|--rebase]", "Fetch a sandbox's branch and merge it into the current branch",
		`Fetch sandbox NAME's branch (as podbot fetch does), then merge it into the
host's current branch; --squash stages its changes as one change for you to
commit; --rebase replays its commits on top (git cherry-pick). A checkout
with uncommitted changes or a detached HEAD is refused. No git hook runs.
A conflict leaves git's ordinary conflict state and the message says how
to go back (git merge --abort, git reset --merge, git cherry-pick --abort).`,
		`  podbot apply fix-1
  podbot apply fix-1 --squash && git commit
  podbot apply fix-1 --rebase`,
		func(ctx context.Context, r *podbot.Review, o *reviewOptions) error {
			mode := podbot.ApplyMerge
			switch {
			case o.squash:
				mode = podbot.ApplySquash
			case o.rebase:
				mode = podbot.ApplyRebase
			}
			res, err := r.Apply(ctx, mode)
			if err != nil {
				return err
			}
			if !f.global.quiet {
				fmt.Fprintf(f.ios.ErrOut, "podbot: %s of %s (%d commit(s)) done\n", mode, strings.TrimPrefix(res.Ref, "refs/heads/"), res.Commits)
			}
			return nil
		},
		func(o *reviewOptions, cmd *cobra.Command) {
			cmd.Flags().BoolVar(&o.squash, "squash", false, "stage the changes as one (git merge --squash); you commit")
			cmd.Flags().BoolVar(&o.rebase, "rebase", false, "replay the commits on top of the current branch (git cherry-pick)")
		})
}
