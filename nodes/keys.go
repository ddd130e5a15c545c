package nodes

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/nats-io/nkeys"

	"github.com/a6afc2ce/hermes-hub/store"
)

// NewSeed creates a fresh user nkey and writes its seed to path, owner-only.
// It refuses to overwrite an existing file. It returns the public key.
func NewSeed(path string) (string, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		if errors.Is(err, fs.ErrExist) {
			return "", fmt.Errorf("%s exists: it may hold a node's identity, so it is not overwritten (remove it first, or choose another file)", path)
		}
		return "", fmt.Errorf("write seed: %w", err)
	}
	pub, err := writeSeed(f)
	if err != nil {
		os.Remove(path)
		return "", fmt.Errorf("write seed %s: %w", path, err)
	}
	return pub, nil
}

// writeSeed writes the seed of a fresh user nkey to f, syncs and closes it,
// and returns the public key.
func writeSeed(f *os.File) (string, error) {
	kp, err := nkeys.CreateUser()
	if err != nil {
		f.Close()
		return "", fmt.Errorf("create nkey: %w", err)
	}
	seed, _ := kp.Seed()
	pub, _ := kp.PublicKey()
	_, werr := f.Write(append(seed, '\n'))
	serr := f.Sync()
	if cerr := f.Close(); werr == nil && serr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = serr
	}
	return pub, werr
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
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("nkey seed: %w", err)
	}
	defer f.Close()
	return readSeed(f, path)
}

// readSeed reads the user nkey seed of the open file f, which must be a
// regular file with no group or world permissions; path names it in
// errors, which never carry the seed.
func readSeed(f *os.File, path string) (nkeys.KeyPair, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("nkey seed: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("nkey seed %s is not a regular file", path)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return nil, fmt.Errorf("nkey seed %s has mode %04o, open to other users: chmod 600 it (accepted: owner-only)", path, perm)
	}
	b, err := io.ReadAll(io.LimitReader(f, 64<<10))
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

// hubSeed loads the hub's own nkey from nats/hub.nk of the state directory
// root, creating it on first use (only where no file is: O_EXCL). Both go
// through root, and the seed must be a regular file there, not a symbolic
// link.
func hubSeed(root *os.Root) (nkeys.KeyPair, error) {
	name := filepath.Join(natsDir, "hub.nk")
	path := filepath.Join(root.Name(), name)
	f, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	switch {
	case err == nil:
		if _, err := writeSeed(f); err != nil {
			root.Remove(name)
			return nil, fmt.Errorf("write seed %s: %w", path, err)
		}
	case !errors.Is(err, fs.ErrExist):
		return nil, fmt.Errorf("write seed: %w", err)
	}
	fi, err := root.Lstat(name)
	if err != nil {
		return nil, fmt.Errorf("nkey seed: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("nkey seed %s is %s, not a regular file: the hub keeps its own seed there; move it away", path, store.FileKind(fi.Mode()))
	}
	if f, err = root.Open(name); err != nil {
		return nil, fmt.Errorf("nkey seed: %w", err)
	}
	defer f.Close()
	return readSeed(f, path)
}

// HubSeedFile is where the hub keeps its own nkey seed under the state
// directory.
func HubSeedFile(stateDir string) string { return filepath.Join(stateDir, "nats", "hub.nk") }

// HubKey is the public key of the hub's own nkey, kept in the state
// directory stateDir (nats/hub.nk), which it creates on first use as the
// hub does at its first start: the servers of a cluster must know the
// key before the hub first connects (`hub nats config`).
func HubKey(stateDir string) (string, error) {
	st, err := openNATSState(HubOptions{StateDir: stateDir})
	if err != nil {
		return "", err
	}
	defer st.close()
	kp, err := hubSeed(st.root)
	if err != nil {
		return "", err
	}
	return kp.PublicKey()
}
