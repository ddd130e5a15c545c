package nodes

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/nats-io/nkeys"
)

// NewSeed creates a fresh user nkey and writes its seed to path, owner-only.
// It refuses to overwrite an existing file. It returns the public key.
func NewSeed(path string) (string, error) {
	kp, err := nkeys.CreateUser()
	if err != nil {
		return "", fmt.Errorf("create nkey: %w", err)
	}
	seed, _ := kp.Seed()
	pub, _ := kp.PublicKey()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		if errors.Is(err, fs.ErrExist) {
			return "", fmt.Errorf("%s exists: it may hold a node's identity, so it is not overwritten (remove it first, or choose another file)", path)
		}
		return "", fmt.Errorf("write seed: %w", err)
	}
	_, werr := f.Write(append(seed, '\n'))
	serr := f.Sync()
	if cerr := f.Close(); werr == nil && serr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = serr
	}
	if werr != nil {
		os.Remove(path)
		return "", fmt.Errorf("write seed %s: %w", path, werr)
	}
	return pub, nil
}

// LoadSeed reads a user nkey seed from path. The file must be a regular
// file with no group or world permissions; the error never carries the
// seed.
func LoadSeed(path string) (nkeys.KeyPair, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("nkey seed: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("nkey seed %s is not a regular file", path)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return nil, fmt.Errorf("nkey seed %s has mode %04o, open to other users: chmod 600 it (accepted: owner-only)", path, perm)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("nkey seed: %w", err)
	}
	kp, err := nkeys.FromSeed(bytes.TrimSpace(b))
	if err != nil {
		return nil, fmt.Errorf("nkey seed %s is not an nkey seed (SU…, as written by `hub node init`)", path)
	}
	if pub, _ := kp.PublicKey(); len(pub) == 0 || pub[0] != 'U' {
		return nil, fmt.Errorf("nkey seed %s is not a user seed (SU…)", path)
	}
	return kp, nil
}

// hubSeed loads the hub's own nkey from dir, creating it on first use.
func hubSeed(dir string) (nkeys.KeyPair, error) {
	path := filepath.Join(dir, "hub.nk")
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		if _, err := NewSeed(path); err != nil {
			return nil, err
		}
	}
	return LoadSeed(path)
}

// HubSeedFile is where the hub keeps its own nkey seed under the state
// directory.
func HubSeedFile(stateDir string) string { return filepath.Join(stateDir, "nats", "hub.nk") }
