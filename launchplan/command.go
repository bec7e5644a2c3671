package launchplan

import (
	"slices"
	"strings"

	"github.com/podbot/podbot/agentkind"

	"github.com/podbot/podbot/errdefs"
)

// DefaultInitCommand returns the container's main process when the request
// names none: it only keeps the container alive. Callers that can, pass an
// init that also reaps zombies (podbot-sidecar init).
func DefaultInitCommand() []string { return []string{"sleep", "infinity"} }

// builtinCommand returns the argv of a built-in agent in a mode, and whether
// that pair is legal. Interactive mode runs the agent in its permissive mode
// (the sandbox is the boundary); hosted modes run its stdio server.
func builtinCommand(kind AgentKind, mode AgentMode) ([]string, bool) {
	if k, ok := agentkind.Lookup(string(kind)); ok {
		return slices.Clone(k.Command), mode == ModeACP
	}
	switch {
	case kind == KindClaude && mode == ModePodbot:
		return []string{"claude", "--dangerously-skip-permissions"}, true
	case kind == KindClaude && mode == ModeACP:
		return []string{"claude-code-acp"}, true
	case kind == KindCodex && mode == ModePodbot:
		return []string{"codex", "--dangerously-bypass-approvals-and-sandbox"}, true
	case kind == KindCodex && mode == ModeCodexAppServer:
		return []string{"codex", "app-server", "--listen", "stdio://"}, true
	case kind == KindCodex && mode == ModeACP:
		return []string{"codex-acp"}, true
	}
	return nil, false
}

// resolveMode checks the kind, the mode and their fit with the intent, and
// returns the effective mode.
func resolveMode(intent Intent, a Agent) (AgentMode, error) {
	switch a.Kind {
	case KindNone, KindClaude, KindCodex, KindCustom:
	default:
		if !agentkind.IsACPKind(string(a.Kind)) {
			return "", configError("agent.kind", errdefs.ErrInvalidValue,
				"unknown agent kind %q; use claude, codex, custom, %s", a.Kind, strings.Join(agentkind.Names(), ", "))
		}
	}
	switch a.Mode {
	case ModeDefault, ModePodbot, ModeCodexAppServer, ModeACP:
	default:
		return "", configError("agent.mode", errdefs.ErrInvalidValue,
			"unknown agent mode %q; use podbot, codex_app_server or acp", a.Mode)
	}
	switch intent {
	case IntentInteractive:
		if a.Mode == ModeCodexAppServer || a.Mode == ModeACP {
			return "", configError("agent.mode", errdefs.ErrConflict,
				"agent mode %s is a hosted mode: use podbot host for it, or agent.mode = podbot with podbot run", a.Mode)
		}
		if a.Kind == KindNone {
			return ModeDefault, nil
		}
		return ModePodbot, nil
	case IntentHosting:
		if a.Kind == KindNone {
			return "", configError("agent.kind", errdefs.ErrMissingRequired,
				"podbot host needs an agent: set agent.kind to claude, codex or custom")
		}
		switch a.Mode {
		case ModePodbot:
			return "", configError("agent.mode", errdefs.ErrConflict,
				"agent mode podbot is interactive: use podbot run for it, or agent.mode = codex_app_server or acp with podbot host")
		case ModeDefault:
			if agentkind.IsACPKind(string(a.Kind)) {
				return ModeACP, nil
			}
			return "", configError("agent.mode", errdefs.ErrMissingRequired,
				"podbot host needs agent.mode = codex_app_server or acp")
		}
		return a.Mode, nil
	case IntentTools:
		if a.Kind != KindNone || a.Mode != ModeDefault {
			return "", configError("agent.kind", errdefs.ErrConflict,
				"tool sessions run no agent; leave agent.kind and agent.mode unset")
		}
		return ModeDefault, nil
	}
	return "", configError("intent", errdefs.ErrInvalidValue,
		"unknown launch intent %q; use interactive, hosting or tools", intent)
}

// agentCommand resolves the agent's argv for an already checked mode.
func agentCommand(a Agent, mode AgentMode) ([]string, error) {
	var argv []string
	switch a.Kind {
	case KindNone:
		if a.Command != "" || len(a.Args) > 0 || len(a.ExtraArgs) > 0 {
			return nil, configError("agent.command", errdefs.ErrConflict,
				"agent.command and arguments need an agent kind; set agent.kind = custom")
		}
		return nil, nil
	case KindCustom:
		if strings.TrimSpace(a.Command) == "" {
			return nil, configError("agent.command", errdefs.ErrMissingRequired,
				"agent.kind = custom needs agent.command (and agent.args if any)")
		}
		argv = append([]string{a.Command}, a.Args...)
	default:
		if a.Command != "" || len(a.Args) > 0 {
			return nil, configError("agent.command", errdefs.ErrConflict,
				"built-in agent %s takes no agent.command or agent.args; use agent.kind = custom to run your own command", a.Kind)
		}
		var ok bool
		if argv, ok = builtinCommand(a.Kind, mode); !ok {
			return nil, configError("agent.mode", errdefs.ErrConflict,
				"agent %s does not support mode %s; use agent.kind = custom with agent.command for it", a.Kind, mode)
		}
	}
	argv = append(argv, a.ExtraArgs...)
	for _, arg := range argv {
		if strings.ContainsRune(arg, 0) {
			return nil, configError("agent.args", errdefs.ErrInvalidValue, "agent argument %q contains a NUL byte", arg)
		}
	}
	return argv, nil
}
