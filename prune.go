package podbot

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/image"

	"github.com/podbot/podbot/egress"
	"github.com/podbot/podbot/egressnet"
	"github.com/podbot/podbot/engine"
	"github.com/podbot/podbot/errdefs"
	"github.com/podbot/podbot/launchplan"
	"github.com/podbot/podbot/pool"
	"github.com/podbot/podbot/sandbox"
)

// createdGrace keeps Prune away from a container another podbot is still
// starting: a container in state created is pruned only once it is older.
const createdGrace = time.Minute

// PruneOptions are the inputs of Prune.
type PruneOptions struct {
	// DryRun lists what would be removed and removes nothing.
	DryRun bool
	// RuntimeDir is the runtime directory launches were given
	// ($XDG_RUNTIME_DIR; "" means the user's cache directory). Prune scans
	// its egress root for directories of this engine's sandboxes whose
	// sandbox and proxy are both gone.
	RuntimeDir string
	// ToolsWorkspaceRoot, when set, is scanned for the directories of
	// tools pool members whose container is gone (a refiller that died
	// between making the directory and the container).
	ToolsWorkspaceRoot string
}

// PrunedImage is one dangling image Prune removed (or would remove).
type PrunedImage struct {
	// ID is the image id.
	ID string `json:"id"`
	// Size is the image size in bytes.
	Size int64 `json:"size"`
}

// PruneResult lists what Prune removed, or with DryRun would remove.
type PruneResult struct {
	// DryRun is set when nothing was removed.
	DryRun bool `json:"dry_run"`
	// Containers are stopped podbot containers.
	Containers []Container `json:"containers"`
	// Egress are the proxies and internal networks of sandboxes that no
	// longer exist (names of the sandboxes they belonged to).
	Egress []string `json:"egress"`
	// EgressDirs are the sandboxes whose leftover egress directory (policy,
	// log, vault) was removed after their sandbox and proxy were gone.
	EgressDirs []string `json:"egress_dirs"`
	// Images are dangling (untagged) images built by podbot.
	Images []PrunedImage `json:"images"`
	// PoolDirs are the directories of tools pool members whose container
	// was gone.
	PoolDirs []string `json:"pool_dirs"`
	// TokenDirs are the claimed pool members, by token directory name,
	// whose GitHub token directory and scope file were removed after the
	// member was gone.
	TokenDirs []string `json:"token_dirs"`
	// Orphans are objects of sandboxes that no longer exist, other than
	// egress proxies: on the kubernetes backend, NetworkPolicies and
	// Secrets whose Pod is gone. The engine has none.
	Orphans []PrunedObject `json:"orphans"`
}

// PrunedObject is one orphaned object Prune removed (or would remove).
type PrunedObject struct {
	// Kind is the object's kind (NetworkPolicy, Secret).
	Kind string `json:"kind"`
	// Name is the object's name.
	Name string `json:"name"`
}

// Prune removes podbot's stopped containers (exited, dead, or created and
// never started for over a minute; a tool session's sidecar link
// directory with its container), half-made pool members (running but
// never parked for over a minute: their refiller died; a ready member is
// paused and left alone) and dangling images podbot built (label
// podbot.image.content). Running containers and other images are never
// touched. A failed removal does not stop the others; the failures are
// returned joined, with the result listing only what was removed.
func Prune(ctx context.Context, conn *engine.Conn, opts PruneOptions) (PruneResult, error) {
	res := PruneResult{DryRun: opts.DryRun, Containers: []Container{}, Images: []PrunedImage{}, Egress: []string{}, EgressDirs: []string{}, PoolDirs: []string{}, TokenDirs: []string{}, Orphans: []PrunedObject{}}
	all, err := List(ctx, conn, ListOptions{All: true})
	if err != nil {
		return res, err
	}
	var errs []error
	now := time.Now()
	for _, c := range all {
		member := memberID(c.Labels[launchplan.LabelPool], c.Name) != ""
		force := false
		switch c.State {
		case "running":
			// A member made ahead is parked (paused) within seconds; one
			// still running after the grace was left half-made.
			if !member || now.Sub(c.Created) < createdGrace {
				continue
			}
			force = true
		case "exited", "dead", "stopped":
		case "created", "configured":
			if now.Sub(c.Created) < createdGrace {
				continue
			}
		default:
			continue
		}
		if !opts.DryRun {
			var link string
			if info, err := conn.Inspect(ctx, c.ID, false); err == nil {
				link = sidecarLinkDirOf(info)
			}
			if err := conn.Remove(ctx, c.ID, force); err != nil {
				errs = append(errs, err)
				continue
			}
			if err := removeSidecarLink(link); err != nil {
				errs = append(errs, err)
			}
			if member {
				if err := removeMemberDir(pool.Member{Pool: c.Labels[launchplan.LabelPool], Name: c.Name, Dir: c.Labels[launchplan.LabelPoolDir]}); err != nil {
					errs = append(errs, err)
				}
			}
			if err := removeMemberToken(opts.RuntimeDir, c.Labels); err != nil {
				errs = append(errs, err)
			}
			if c.Labels[egressnet.LabelMode] == string(egress.ModeAllowlist) {
				if err := removeEgress(ctx, conn, egressNameOf(c), c.Labels[LabelEgressDir]); err != nil {
					errs = append(errs, err)
				}
			}
		}
		res.Containers = append(res.Containers, c)
	}
	if err := prunePoolDirs(ctx, conn, opts, &res); err != nil {
		errs = append(errs, err)
	}
	if err := pruneTokenScopes(ctx, conn, opts, &res); err != nil {
		errs = append(errs, err)
	}
	if err := pruneEgress(ctx, conn, opts, &res); err != nil {
		errs = append(errs, err)
	}
	if err := pruneEgressDirs(ctx, conn, opts, &res); err != nil {
		errs = append(errs, err)
	}
	imgs, err := conn.API().ImageList(ctx, image.ListOptions{
		Filters: filters.NewArgs(filters.Arg("dangling", "true"), filters.Arg("label", ContentLabel)),
	})
	if err != nil {
		errs = append(errs, engine.Classify("list images", conn.Endpoint().String(), "", err))
		return res, errors.Join(errs...)
	}
	for _, im := range imgs {
		if !opts.DryRun {
			if _, err := conn.API().ImageRemove(ctx, im.ID, image.RemoveOptions{PruneChildren: true}); err != nil {
				errs = append(errs, engine.Classify("remove image", conn.Endpoint().String(), im.ID, err))
				continue
			}
		}
		res.Images = append(res.Images, PrunedImage{ID: im.ID, Size: im.Size})
	}
	return res, errors.Join(errs...)
}

// pruneEgress removes the egress proxies and internal networks whose
// sandbox no longer exists (left by a crash or a removal outside podbot).
func pruneEgress(ctx context.Context, conn *engine.Conn, opts PruneOptions, res *PruneResult) error {
	left := map[string]bool{}
	proxies, err := conn.List(ctx, map[string]string{egressnet.LabelRole: egressnet.RoleProxy}, true, false)
	if err != nil {
		return err
	}
	young := map[string]bool{} // a launch may still be making its sandbox
	for _, p := range proxies {
		left[p.Labels[egressnet.LabelSandbox]] = true
		if time.Since(p.Created) < createdGrace {
			young[p.Labels[egressnet.LabelSandbox]] = true
		}
	}
	nets, err := conn.ListNetworks(ctx, map[string]string{egressnet.LabelRole: egressnet.RoleNetwork})
	if err != nil {
		return err
	}
	for _, n := range nets {
		left[n.Labels[egressnet.LabelSandbox]] = true
	}
	var errs []error
	for name := range left {
		if name == "" || young[name] {
			continue
		}
		if _, err := conn.Inspect(ctx, name, false); err == nil || !errors.Is(err, errdefs.ErrNotFound) {
			continue // the sandbox is still there (or the engine could not say)
		}
		if !renamedGone(ctx, conn, name) {
			continue // a claimed pool member, renamed, keeps it
		}
		if !opts.DryRun {
			if err := removeEgress(ctx, conn, name, proxyEgressDir(ctx, conn, name)); err != nil {
				errs = append(errs, err)
				continue
			}
		}
		res.Egress = append(res.Egress, name)
	}
	sort.Strings(res.Egress)
	return errors.Join(errs...)
}

// proxyEgressDir returns the egress directory of sandbox name as its proxy
// container mounts it (the policy mount's parent), or "" when there is no
// proxy or the path does not have the shape podbot gives it
// (.../egress/<name>), so prune never removes anything else.
func proxyEgressDir(ctx context.Context, conn *engine.Conn, name string) string {
	in, err := conn.Inspect(ctx, egressnet.ProxyName(name), false)
	if err != nil {
		return ""
	}
	for _, m := range in.Mounts {
		if m.Destination != egressnet.PolicyDirTarget {
			continue
		}
		dir := filepath.Dir(m.Source)
		if filepath.Base(m.Source) == "policy" && filepath.Base(dir) == name && filepath.Base(filepath.Dir(dir)) == "egress" {
			return dir
		}
	}
	return ""
}

// maxEgressScan bounds how many entries of the egress root prune looks at.
const maxEgressScan = 4096

// pruneEgressDirs removes the egress directories this engine's launches
// left under the egress root (egressnet.Leftovers: podbot's own, marked
// for this engine, older than createdGrace) whose sandbox and proxy are
// both gone, which pruneEgress cannot see: it finds a directory through
// its proxy's mount.
func pruneEgressDirs(ctx context.Context, conn *engine.Conn, opts PruneOptions, res *PruneResult) error {
	root, err := egressnet.StateRoot(opts.RuntimeDir)
	if err != nil {
		return err
	}
	dirs, err := egressnet.Leftovers(egressnet.LeftoverOptions{Root: root, Endpoint: conn.Endpoint().String(),
		Before: time.Now().Add(-createdGrace), Max: maxEgressScan})
	if err != nil {
		return err
	}
	var errs []error
	for _, d := range dirs {
		name := filepath.Base(d.Root)
		if !gone(ctx, conn, name) || !gone(ctx, conn, egressnet.ProxyName(name)) || !renamedGone(ctx, conn, name) {
			continue
		}
		if !opts.DryRun {
			if err := d.Remove(); err != nil {
				errs = append(errs, err)
				continue
			}
		}
		res.EgressDirs = append(res.EgressDirs, name)
	}
	sort.Strings(res.EgressDirs)
	return errors.Join(errs...)
}

// gone reports whether the engine says container name does not exist (an
// engine that cannot say counts as not gone).
func gone(ctx context.Context, conn *engine.Conn, name string) bool {
	_, err := conn.Inspect(ctx, name, false)
	return errors.Is(err, errdefs.ErrNotFound)
}

// prunePoolDirs removes the directories under opts.ToolsWorkspaceRoot
// named like a tools pool member's (pool-<pool>-<id>), older than
// createdGrace, whose member container does not exist.
func prunePoolDirs(ctx context.Context, conn *engine.Conn, opts PruneOptions, res *PruneResult) error {
	if opts.ToolsWorkspaceRoot == "" {
		return nil
	}
	ents, err := os.ReadDir(opts.ToolsWorkspaceRoot)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return &errdefs.FilesystemError{Op: "list tool workspaces", Path: opts.ToolsWorkspaceRoot, Err: err}
	}
	var errs []error
	for i, e := range ents {
		if i == maxEgressScan {
			break
		}
		rest, ok := strings.CutPrefix(e.Name(), sandbox.MemberDirPrefix)
		if !ok || !e.IsDir() || len(rest) < 14 || rest[len(rest)-13] != '-' {
			continue
		}
		poolName, id := rest[:len(rest)-13], rest[len(rest)-12:]
		if pool.ValidName(poolName) != nil || !memberIDPattern.MatchString(id) {
			continue
		}
		info, err := e.Info()
		if err != nil || time.Since(info.ModTime()) < createdGrace || !gone(ctx, conn, MemberName(poolName, id)) {
			continue
		}
		m := pool.Member{Pool: poolName, Name: MemberName(poolName, id), Dir: filepath.Join(opts.ToolsWorkspaceRoot, e.Name())}
		if !opts.DryRun {
			if err := removeMemberDir(m); err != nil {
				errs = append(errs, err)
				continue
			}
		}
		res.PoolDirs = append(res.PoolDirs, m.Dir)
	}
	return errors.Join(errs...)
}

// renamedGone reports whether no container records egress name name
// (egressnet.LabelName): a claimed pool member is renamed and keeps its
// member name's proxy, network and directory. An engine that cannot say
// counts as not gone.
func renamedGone(ctx context.Context, conn *engine.Conn, name string) bool {
	rows, err := conn.List(ctx, map[string]string{egressnet.LabelName: name}, true, false)
	return err == nil && len(rows) == 0
}
