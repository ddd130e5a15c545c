package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/a6afc2ce/hermes-hub/admin"
	"github.com/a6afc2ce/hermes-hub/hub"
	"github.com/a6afc2ce/hermes-hub/workspaces"
	"github.com/a6afc2ce/hermes-hub/workspaces/docker"
	"github.com/a6afc2ce/hermes-hub/workspaces/policy"
)

// containerLister is a destination that lists its containers (kind docker).
type containerLister interface {
	Containers(ctx context.Context) ([]docker.Container, error)
}

// workspaceAdmin serves the admin API's workspace endpoints from the open
// workspaces and the hub's resolution (the policy in force, reloaded).
type workspaceAdmin struct {
	set *workspaces.Set
	hub *hub.Hub
}

var _ admin.WorkspaceAdmin = workspaceAdmin{}

func (w workspaceAdmin) policy() *policy.Policy {
	if p := w.hub.WorkspacePolicy(); p != nil {
		return p
	}
	return w.set.Policy()
}

// Workspaces lists the open workspaces with the roles that may use them
// now and a docker destination's containers.
func (w workspaceAdmin) Workspaces(ctx context.Context) []admin.WorkspaceView {
	p := w.policy()
	var out []admin.WorkspaceView
	for _, n := range w.set.Names() {
		wc, _ := w.set.Policy().Workspace(n)
		v := admin.WorkspaceView{Name: n, Kind: wc.Destination.Kind, Destination: w.set.Describe(n), Roles: p.RolesFor(n)}
		if host, ok := w.set.Host(n); ok {
			v.Path = host.Dir()
		} else {
			v.Path, _ = filepath.Abs(wc.Path)
		}
		if run, _ := w.set.Runner(n); run != nil {
			if l, ok := run.(containerLister); ok {
				cs, err := l.Containers(ctx)
				if err != nil {
					v.ContainersError = err.Error()
				}
				v.Containers = []admin.ContainerView{}
				for _, c := range cs {
					v.Containers = append(v.Containers, admin.ContainerView{ID: c.ID, Session: c.Session, State: c.State, Created: c.Created, LastUsed: c.LastUsed})
				}
			}
		}
		out = append(out, v)
	}
	return out
}

// Effective resolves a conversation's workspace as the hub does.
func (w workspaceAdmin) Effective(key string) (policy.Resolution, error) {
	return w.hub.EffectiveWorkspace(key)
}

// Reset removes a workspace's sandboxes through its runner.
func (w workspaceAdmin) Reset(ctx context.Context, name, session string) error {
	if _, ok := w.set.Host(name); !ok {
		return fmt.Errorf("%w: %w", admin.ErrUnknownWorkspace, w.set.Policy().UnknownError(name))
	}
	err := w.set.Reset(ctx, name, session)
	if errors.Is(err, workspaces.ErrLocal) {
		return fmt.Errorf("%w: %w", admin.ErrNoSandbox, err)
	}
	return err
}
