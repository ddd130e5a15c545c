package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"

	"github.com/a6afc2ce/hermes-hub/config"
	"github.com/a6afc2ce/hermes-hub/verbs"
	"github.com/a6afc2ce/hermes-hub/workspaces"
	"github.com/a6afc2ce/hermes-hub/workspaces/docker"
)

// runnerFactory builds the runners of the destinations other than local:
// the one place a destination kind is plugged in. A docker runner protects
// the state directory, the configuration file and the secret files it
// names (docs/workspaces.md): it refuses a workspace that holds the state
// anywhere but at its top level, or any of the files.
func runnerFactory(cfg *config.Config, logger *slog.Logger) workspaces.RunnerFactory {
	id := hubID(cfg.StateDir)
	state, _ := filepath.Abs(cfg.StateDir)
	protect := append([]string{state}, cfg.ProtectedPaths()...)
	return func(name string, d config.Destination) (verbs.Runner, error) {
		switch d.Kind {
		case config.DestinationDocker:
			var dir string
			if wc, ok := cfg.WorkspaceByName(name); ok {
				dir, _ = filepath.Abs(wc.Path)
			}
			return docker.New(docker.Config{
				Workspace: name, Image: d.Image, Network: d.Network, Memory: int64(d.Memory), CPUs: d.CPUs,
				Pids: d.Pids, User: d.User, EnvAllow: d.EnvAllow, IdleTimeout: d.IdleTimeout.D(), HubID: id, Host: d.DockerHost,
				Dir: dir, Protect: protect,
			}, docker.Options{Logger: logger})
		}
		return nil, fmt.Errorf("destination kind %q is not supported (accepted: %s)", d.Kind, strings.Join(config.DestinationKinds, ", "))
	}
}

// hubID names this hub's sandboxes (a label on its containers), so two hubs
// on one machine never share them: a hash of its state directory's path.
func hubID(stateDir string) string {
	abs, err := filepath.Abs(stateDir)
	if err != nil {
		abs = stateDir
	}
	sum := sha256.Sum256([]byte(abs))
	return hex.EncodeToString(sum[:8])
}
