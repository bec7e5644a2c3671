package main

import (
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/podbot/podbot"
)

func newImageCmd(f *factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "image",
		Short: "Manage the sandbox image",
	}
	var opts podbot.ImageBuildOptions
	var asJSON bool
	var agents string
	var caCerts []string
	var tag string
	var goose podbot.GooseArtifact
	buildCmd := &cobra.Command{
		Use:   "build",
		Short: "Build the default sandbox image (localhost/podbot-sandbox)",
		Long: `Build localhost/podbot-sandbox:<version> (also tagged latest) through the
engine's build API from the embedded Containerfile: Debian bookworm with bash,
coreutils, git, python3, ca-certificates and podbot's git askpass helper.

--bootstrap needs no registry: it makes a Debian rootfs with mmdebstrap (cached
under podbot's cache directory), imports it into the engine and builds on it.
A build is skipped when an image from the same inputs exists, unless --force.

--agents also builds localhost/podbot-agent:<version> (and latest) on top of
it: Podman configured for nested containers (fuse-overlayfs, slirp4netns,
uidmap, runc, vfs storage), Node.js and npm, and the listed agent CLIs
(claude, codex, opencode, droid, claude-acp, codex-acp, gemini, goose;
"none" for Podman only) at the versions podbot pins. Use it with
image = "localhost/podbot-agent:latest". Behind a TLS-intercepting proxy,
--ca-cert adds its CA certificate so npm reaches the registry. --tag builds
it under another name instead (a variant beside the default image).

Goose is on no registry podbot builds from: name its release artifact (a
local file or an https URL; the upstream Linux .tar.bz2, a .tar.gz, a .tar,
or the executable itself) with --goose-artifact, its sha256 with
--goose-sha256 and its version with --goose-version. podbot reads it on
this machine, refuses it unless the sha256 matches, and installs the one
file named goose from it as /usr/local/bin/goose.`,
		Example: `  podbot image build --bootstrap
  podbot image build --bootstrap --agents claude,codex
  podbot image build --bootstrap --agents opencode,gemini,claude-acp,codex-acp
  podbot image build --agents opencode --goose-artifact ./goose-x86_64-unknown-linux-gnu.tar.bz2 \
    --goose-sha256 <sha256 of that file> --goose-version <its version>
  podbot --engine-socket unix:///run/podman/podman.sock image build --force`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			withGoose := goose.Source != "" || goose.SHA256 != "" || goose.Version != ""
			if withGoose && (goose.Source == "" || goose.SHA256 == "" || goose.Version == "") {
				return &usageError{msg: "--goose-artifact, --goose-sha256 and --goose-version go together: name the artifact, its sha256 and its version"}
			}
			if (withGoose || tag != "") && !cmd.Flags().Changed("agents") {
				return &usageError{msg: "--goose-* and --tag apply to the agent image: add --agents LIST (none for Goose alone)"}
			}
			conn, err := f.engine(cmd.Context())
			if err != nil {
				return err
			}
			cache, err := f.cacheDir()
			if err != nil {
				return err
			}
			opts.CacheDir = filepath.Join(cache, "images")
			opts.Progress = func(line string) { fmt.Fprintln(f.ios.ErrOut, line) }
			var agentList []string
			if cmd.Flags().Changed("agents") {
				if agentList, err = podbot.ParseAgents(agents); err != nil {
					return err
				}
			}
			res, err := podbot.BuildImage(cmd.Context(), conn.API(), opts)
			if err != nil {
				return err
			}
			if cmd.Flags().Changed("agents") {
				if err := printBuild(f, res, asJSON); err != nil {
					return err
				}
				aopts := podbot.AgentImageOptions{
					Base: res.Image, Agents: agentList, CACerts: caCerts, Force: opts.Force, Progress: opts.Progress, Tag: tag,
				}
				if withGoose {
					aopts.Goose = &goose
				}
				res, err = podbot.BuildAgentImage(cmd.Context(), conn.API(), aopts)
				if err != nil {
					return err
				}
			}
			return printBuild(f, res, asJSON)
		},
	}
	fl := buildCmd.Flags()
	fl.BoolVar(&opts.Bootstrap, "bootstrap", false, "build on a locally bootstrapped Debian rootfs (no registry needed)")
	fl.BoolVar(&opts.Force, "force", false, "rebuild even when the image is current")
	fl.BoolVar(&asJSON, "json", false, "print the result as JSON")
	fl.StringVar(&agents, "agents", "", "also build the agent image with these agent CLIs: `LIST` of claude, codex, opencode, droid, claude-acp, codex-acp, gemini, goose, or none")
	fl.StringVar(&tag, "tag", "", "name the agent image `REPOSITORY:TAG` instead of localhost/podbot-agent:<version> and latest")
	fl.StringVar(&goose.Source, "goose-artifact", "", "Goose release artifact to install: local `FILE` or https URL")
	fl.StringVar(&goose.SHA256, "goose-sha256", "", "the Goose artifact's sha256 (`HEX`); the build refuses any other")
	fl.StringVar(&goose.Version, "goose-version", "", "the Goose `VERSION` the artifact holds (recorded in the image label)")
	fl.StringArrayVar(&caCerts, "ca-cert", nil, "extra CA certificate `PEM` file the agent image trusts (repeatable)")
	cmd.AddCommand(buildCmd)
	return cmd
}

// printBuild prints one image build result.
func printBuild(f *factory, res podbot.ImageBuildResult, asJSON bool) error {
	if asJSON {
		return writeJSON(f.ios.Out, res)
	}
	state := "built"
	if res.Skipped {
		state = "up to date"
	}
	_, err := fmt.Fprintf(f.ios.Out, "%s %s (%s)\n", res.Image, state, shortID(res.ID))
	return err
}

// shortID shortens an image or container id for display.
func shortID(id string) string {
	if i := len("sha256:"); len(id) > i && id[:i] == "sha256:" {
		id = id[i:]
	}
	if len(id) > 12 {
		return id[:12]
	}
	return id
}
