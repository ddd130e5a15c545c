package main

import (
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"

	"github.com/a6afc2ce/hermes-hub/config"
	"github.com/a6afc2ce/hermes-hub/executor"
	"github.com/a6afc2ce/hermes-hub/verbs"
)

// loadConfig loads the configuration with the command-line overrides applied.
func loadConfig(c commonFlags) (*config.Config, error) {
	cfg, err := config.Load(config.Discover(c.config))
	if err != nil {
		return nil, err
	}
	if c.state != "" {
		cfg.StateDir = c.state
	}
	if c.workspace != "" {
		cfg.Workspace = c.workspace
	}
	return cfg, nil
}

// toolchain is the executor with the verbs registered, and what to close.
type toolchain struct {
	exec *executor.Executor
	ws   *verbs.Workspace
}

func (t *toolchain) Close() error { return t.ws.Close() }

// buildExecutor opens the workspace and registers every verb.
func buildExecutor(cfg *config.Config, logger *slog.Logger) (*toolchain, error) {
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	wopts := verbs.WorkspaceOptions{
		MaxWriteChars: cfg.Verbs.MaxWriteChars,
		MaxReadBytes:  int64(cfg.Verbs.MaxReadBytes),
	}
	if rel, ok := within(cfg.Workspace, cfg.StateDir); ok {
		wopts.Deny = append(wopts.Deny, rel)
	}
	ws, err := verbs.OpenWorkspace(cfg.Workspace, wopts)
	if err != nil {
		return nil, err
	}
	vopts := verbs.DefaultOptions(cfg.StateDir)
	vopts.EnvAllow = cfg.Verbs.Proc.EnvAllow
	vopts.DefaultTimeout = cfg.Verbs.Proc.DefaultTimeout.D()
	vopts.MaxTimeout = cfg.Verbs.Proc.MaxTimeout.D()
	vopts.MaxOutputBytes = int64(cfg.Verbs.Proc.MaxOutputBytes)
	reg := executor.NewRegistry()
	if err := verbs.Register(reg, ws, vopts); err != nil {
		ws.Close()
		return nil, err
	}
	return &toolchain{exec: executor.New(reg, executor.Options{Logger: logger}), ws: ws}, nil
}

// within reports whether path lies inside (or is) dir, and its relative form.
func within(dir, path string) (string, bool) {
	ad, err1 := filepath.Abs(dir)
	ap, err2 := filepath.Abs(path)
	if err1 != nil || err2 != nil {
		return "", false
	}
	if r, err := filepath.EvalSymlinks(ad); err == nil {
		ad = r
	}
	if r, err := filepath.EvalSymlinks(ap); err == nil {
		ap = r
	}
	rel, err := filepath.Rel(ad, ap)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return "", false
	}
	if rel == "." {
		return "", false // the workspace is the state dir: nothing sensible to deny
	}
	return filepath.ToSlash(rel), true
}

// registryOnly builds the verbs' registry for commands that only need
// schemas (verbs, schema), without touching the workspace.
func registryOnly() (*executor.Executor, error) {
	reg := executor.NewRegistry()
	ws, err := verbs.OpenWorkspace(".", verbs.WorkspaceOptions{})
	if err != nil {
		return nil, fmt.Errorf("open workspace: %w", err)
	}
	defer ws.Close()
	if err := verbs.Register(reg, ws, verbs.DefaultOptions(".hub")); err != nil {
		return nil, err
	}
	return executor.New(reg, executor.Options{}), nil
}
