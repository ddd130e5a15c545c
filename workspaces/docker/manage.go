package docker

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/client"
)

// labelCheck marks the throwaway containers of Check.
const labelCheck = "io.hermes-hub.check"

// Check tells whether the destination can work (for hub doctor): the
// daemon reachable, the image present, and a container with the
// configured limits, security settings and mounts (a tmpfs stands for the
// workspace directory) created, started and removed. Its error is one
// line naming the workspace and the fix.
func (r *Runner) Check(ctx context.Context) error {
	cli, err := r.client()
	if err != nil {
		return err
	}
	if _, err := cli.Ping(ctx, client.PingOptions{NegotiateAPIVersion: true}); err != nil {
		return r.apiError("answer", err)
	}
	if _, err := cli.ImageInspect(ctx, r.cfg.Image); err != nil {
		if cerrdefs.IsNotFound(err) {
			return r.createError(cerrdefs.ErrNotFound.WithMessage("no such image"))
		}
		return r.apiError("inspect the image "+r.cfg.Image, err)
	}
	var nonce [6]byte
	_, _ = rand.Read(nonce[:])
	labels := r.labels("", "check")
	labels[labelCheck] = "1"
	cfg, hc, err := r.containerSpec(r.containerUser(fileOwner{}, false), labels, []mount.Mount{{Type: mount.TypeTmpfs, Target: "/workspace"}})
	if err != nil {
		return err
	}
	res, err := cli.ContainerCreate(ctx, client.ContainerCreateOptions{Name: r.containerName("") + "-check-" + hex.EncodeToString(nonce[:]), Config: cfg, HostConfig: hc})
	if err != nil {
		return r.createError(err)
	}
	defer func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), apiTimeout)
		defer cancel()
		_ = r.remove(rctx, cli, res.ID)
	}()
	if _, err := cli.ContainerStart(ctx, res.ID, client.ContainerStartOptions{}); err != nil {
		return r.startError(err)
	}
	return nil
}

// list returns this hub's containers of the workspace.
func (r *Runner) list(ctx context.Context, cli *client.Client) ([]container.Summary, error) {
	f := make(client.Filters).Add("label", LabelHub+"="+r.cfg.HubID, LabelWorkspace+"="+r.cfg.Workspace)
	res, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f})
	if err != nil {
		return nil, r.apiError("list the workspace's containers", err)
	}
	var out []container.Summary
	for _, c := range res.Items {
		// The daemon's label filter matches prefixes of nothing, but be
		// exact anyway: another workspace's name is never ours.
		if c.Labels[LabelHub] == r.cfg.HubID && c.Labels[LabelWorkspace] == r.cfg.Workspace {
			out = append(out, c)
		}
	}
	return out, nil
}

// Reset removes the workspace's container of session, or all of its
// containers when session is "". A call running in one fails with the
// container removed; the next call creates a new one.
func (r *Runner) Reset(ctx context.Context, session string) error {
	cli, err := r.client()
	if err != nil {
		return err
	}
	cs, err := r.list(ctx, cli)
	if err != nil {
		return err
	}
	for _, c := range cs {
		if session != "" && c.Labels[LabelSession] != session {
			continue
		}
		if err := r.remove(ctx, cli, c.ID); err != nil {
			return err
		}
		r.forget(c)
	}
	return nil
}

// forget drops the record of a removed container.
func (r *Runner) forget(c container.Summary) {
	name := r.containerName(c.Labels[LabelSession])
	r.mu.Lock()
	b := r.boxes[name]
	r.mu.Unlock()
	if b == nil {
		return
	}
	b.mu.Lock()
	if b.id == c.ID {
		b.id = ""
	}
	b.mu.Unlock()
}

// Containers lists the workspace's containers (for hub workspaces show).
func (r *Runner) Containers(ctx context.Context) ([]Container, error) {
	cli, err := r.client()
	if err != nil {
		return nil, err
	}
	cs, err := r.list(ctx, cli)
	if err != nil {
		return nil, err
	}
	out := make([]Container, 0, len(cs))
	for _, c := range cs {
		if c.Labels[labelCheck] != "" {
			continue
		}
		ct := Container{ID: c.ID, Session: c.Labels[LabelSession], State: string(c.State), Created: time.Unix(c.Created, 0).UTC()}
		r.mu.Lock()
		b := r.boxes[r.containerName(ct.Session)]
		r.mu.Unlock()
		if b != nil {
			b.mu.Lock()
			if b.id == c.ID {
				ct.LastUsed = b.lastUsed
			}
			b.mu.Unlock()
		}
		out = append(out, ct)
	}
	return out, nil
}

// sweepEvery is how often the sweeper looks for idle containers.
func (r *Runner) sweepEvery() time.Duration {
	return max(r.cfg.IdleTimeout/4, time.Second)
}

// sweeper removes idle containers until Close.
func (r *Runner) sweeper() {
	defer r.wg.Done()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-r.done
		cancel()
	}()
	for {
		t := r.clock.AfterFunc(r.sweepEvery(), func() {
			select {
			case r.kick <- struct{}{}:
			default:
			}
		})
		select {
		case <-r.done:
			t.Stop()
			return
		case <-r.kick:
		}
		r.sweep(ctx)
	}
}

// sweep removes the workspace's containers unused for IdleTimeout. A
// container this runner has not seen yet (made before the hub restarted)
// counts as used when first seen.
func (r *Runner) sweep(ctx context.Context) {
	cli, err := r.client()
	if err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, apiTimeout)
	defer cancel()
	cs, err := r.list(ctx, cli)
	if err != nil {
		r.log.Debug("idle sweep skipped", "err", err)
		return
	}
	now := r.clock.Now()
	for _, c := range cs {
		if c.Labels[labelCheck] != "" {
			continue
		}
		b := r.box(r.containerName(c.Labels[LabelSession]), c.Labels[LabelSession])
		b.mu.Lock()
		if b.active == 0 && now.Sub(b.lastUsed) >= r.cfg.IdleTimeout {
			if err := r.remove(ctx, cli, c.ID); err != nil {
				r.log.Warn("cannot remove an idle container", "container", short(c.ID), "err", err)
			} else {
				r.log.Info("removed an idle container", "container", short(c.ID), "session", c.Labels[LabelSession])
				if b.id == c.ID {
					b.id = ""
				}
			}
		}
		b.mu.Unlock()
	}
}
