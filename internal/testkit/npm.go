package testkit

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// NPMCacheEnv names the directory the npm packages of the end-to-end tests
// are installed under, when set; else ${XDG_CACHE_HOME:-~/.cache}/hermes-hub/npm.
// `make e2e-deps` installs them there, never in the working tree.
const NPMCacheEnv = "HUB_NPM_CACHE"

// NPMPackages returns the directory where `make e2e-deps` installed the
// npm packages that folder's package-lock.json pins (folder as the test
// sees it, such as "e2e"): <cache>/<folder, from the module's root>/<the
// first 12 hex digits of the lock's SHA-256>, holding node_modules. A lock
// that changes is installed anew beside the old one. When the packages
// are not installed, the test is Unavailable, saying to run make
// e2e-deps.
func NPMPackages(t testing.TB, folder string) string {
	t.Helper()
	dir, err := NPMDir(folder)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", ".package-lock.json")); err != nil {
		Unavailable(t, fmt.Sprintf("the npm packages of %s are not installed in %s: run make e2e-deps", folder, dir))
	}
	return dir
}

// NodeScript prepares script, a file of folder, to run with node against
// folder's installed packages (NPMPackages): a copy in a temporary
// directory beside a node_modules link to them, where node resolves the
// script's imports. It returns the copy's path.
func NodeScript(t testing.TB, folder, script string) string {
	t.Helper()
	pkgs := NPMPackages(t, folder)
	dir := t.TempDir()
	if err := os.Symlink(filepath.Join(pkgs, "node_modules"), filepath.Join(dir, "node_modules")); err != nil {
		t.Fatal(err)
	}
	// package.json comes along: it says whether .js files are modules.
	for _, f := range []string{script, "package.json"} {
		data, err := os.ReadFile(filepath.Join(folder, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, script)
}

// NPMDir is where folder's packages are installed, or would be (see
// NPMPackages).
func NPMDir(folder string) (string, error) {
	abs, err := filepath.Abs(folder)
	if err != nil {
		return "", err
	}
	root, err := moduleRoot(abs)
	if err != nil {
		return "", err
	}
	rel, err := filepath.Rel(root, abs)
	if err != nil {
		return "", err
	}
	lock, err := os.ReadFile(filepath.Join(abs, "package-lock.json"))
	if err != nil {
		return "", fmt.Errorf("the npm packages of %s: %w", folder, err)
	}
	sum := sha256.Sum256(lock)
	cache, err := NPMCache()
	if err != nil {
		return "", err
	}
	// The Makefile's npm-install computes the same path.
	return filepath.Join(cache, rel, hex.EncodeToString(sum[:])[:12]), nil
}

// NPMCache is the directory the end-to-end tests' npm packages are
// installed under (NPMCacheEnv).
func NPMCache() (string, error) {
	if d := os.Getenv(NPMCacheEnv); d != "" {
		return d, nil
	}
	base := os.Getenv("XDG_CACHE_HOME")
	if base == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("no cache directory for the npm packages (set %s or XDG_CACHE_HOME): %w", NPMCacheEnv, err)
		}
		base = filepath.Join(home, ".cache")
	}
	return filepath.Join(base, "hermes-hub", "npm"), nil
}

// moduleRoot is the directory above dir (or dir) that holds go.mod.
func moduleRoot(dir string) (string, error) {
	for d := dir; ; {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d, nil
		}
		up := filepath.Dir(d)
		if up == d {
			return "", errors.New("no go.mod above " + dir)
		}
		d = up
	}
}
