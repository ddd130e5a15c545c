package nodes

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/a6afc2ce/hermes-hub/store"
)

// natsDir is the hub's NATS state in its state directory: its own nkey seed
// (hub.nk) and the embedded server's JetStream storage (jetstream/).
const natsDir = "nats"

// natsState is nats/ of the hub's state directory, reached through the
// directory opened once (HubOptions.State).
type natsState struct {
	root *os.Root // the state directory
	// dir names nats/ for the embedded server, which opens its files by
	// path: a descriptor's path (store.DirPath) where the system has one.
	dir     string
	release []func() error
}

// openNATSState creates nats/ in the state directory of o and opens it. A
// nats/ or nats/jetstream that is not a directory of its own (a symbolic
// link, say) is refused: the server would follow it.
func openNATSState(o HubOptions) (_ *natsState, err error) {
	st := &natsState{root: o.State}
	defer func() {
		if err != nil {
			st.close()
		}
	}()
	if st.root == nil {
		if err := os.MkdirAll(o.StateDir, 0o700); err != nil {
			return nil, fmt.Errorf("nats state: %w", err)
		}
		if st.root, err = os.OpenRoot(o.StateDir); err != nil {
			return nil, fmt.Errorf("nats state: %w", err)
		}
		st.release = append(st.release, st.root.Close)
	}
	if err := st.root.Mkdir(natsDir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("nats state: %w", err)
	}
	for _, d := range []string{natsDir, filepath.Join(natsDir, "jetstream")} {
		fi, err := st.root.Lstat(d)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err == nil && !fi.IsDir() {
			err = fmt.Errorf("%s is %s, not a directory: the hub keeps its NATS state there; move it away", filepath.Join(st.root.Name(), d), store.FileKind(fi.Mode()))
		}
		if err != nil {
			return nil, fmt.Errorf("nats state: %w", err)
		}
	}
	dir, release, err := store.DirPath(st.root, natsDir)
	if err != nil {
		return nil, fmt.Errorf("nats state: %w", err)
	}
	st.dir = dir
	st.release = append([]func() error{release}, st.release...)
	return st, nil
}

func (st *natsState) close() {
	for _, f := range st.release {
		_ = f()
	}
	st.release = nil
}

// openNodeDB opens a node's ledger, node.db in stateDir (created
// owner-only), through the directory: never a symbolic link
// (store.OpenBolt).
func openNodeDB(stateDir string) (*bolt.DB, error) {
	if err := os.MkdirAll(stateDir, 0o700); err != nil {
		return nil, fmt.Errorf("node state: %w", err)
	}
	root, err := os.OpenRoot(stateDir)
	if err != nil {
		return nil, fmt.Errorf("node state: %w", err)
	}
	defer root.Close()
	db, err := store.OpenBolt(root, "node.db", 0o600, bolt.Options{Timeout: time.Second})
	if err != nil {
		if errors.Is(err, berrors.ErrTimeout) {
			return nil, fmt.Errorf("node state %s is in use by another hub node", stateDir)
		}
		return nil, fmt.Errorf("node state: %w", err)
	}
	return db, nil
}
