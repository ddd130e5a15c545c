package store

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// Layout names inside the state root.
const (
	DBFile              = "hub.db"
	DeliveryTargetsFile = "pma/delivery_targets.json"
	DefaultDeliveries   = "pma/deliveries.jsonl"
	ChannelDirectory    = "chat/channel_directory.json"
	FlowsDir            = "flows"
	ProcDir             = "proc"
	SocketFile          = "hub.sock"
)

// DefaultLockTimeout is how long Open waits for another process to release hub.db.
const DefaultLockTimeout = 2 * time.Second

// Options tune Open.
type Options struct {
	// LockTimeout bounds the wait for the database lock; zero means DefaultLockTimeout.
	LockTimeout time.Duration
	// NoSync turns off fsync on commit; for benchmarks only.
	NoSync bool
}

// State is an open state root: the state directory (held open; see
// StateDir) and hub.db.
type State struct {
	*StateDir
	db *bolt.DB
	gc *DB // hub.db's group commit, shared by its writers
}

// LockedError reports that another process holds the state directory.
type LockedError struct {
	Dir string
	PID int    // 0 when unknown
	Cmd string // the holder's command line, when known
}

func (e *LockedError) Error() string {
	who := "another process"
	if e.PID > 0 {
		who = "process " + strconv.Itoa(e.PID)
		if e.Cmd != "" {
			who += " (" + e.Cmd + ")"
		}
	}
	return fmt.Sprintf("state directory %s is in use by %s: stop it, or point this command at the running hub", e.Dir, who)
}

// ErrLocked matches a *LockedError with errors.Is.
var ErrLocked = errors.New("state directory is in use")

// Is makes errors.Is(err, ErrLocked) true for a *LockedError.
func (e *LockedError) Is(target error) bool { return target == ErrLocked }

// Open opens the state directory dir (OpenStateDir: created with
// owner-only permissions, with its layout) and hub.db in it, through the
// directory (OpenBolt: never a symbolic link). If another process holds the
// database, Open fails after the lock timeout with a *LockedError naming
// the holder; it never hangs.
func Open(dir string, opts Options) (*State, error) {
	sd, err := OpenStateDir(dir)
	if err != nil {
		return nil, err
	}
	db, err := openDB(sd, opts)
	if err != nil {
		sd.Close()
		return nil, err
	}
	return &State{StateDir: sd, db: db, gc: NewDB(db)}, nil
}

// openDB opens hub.db in the state directory sd.
func openDB(sd *StateDir, opts Options) (*bolt.DB, error) {
	timeout := opts.LockTimeout
	if timeout <= 0 {
		timeout = DefaultLockTimeout
	}
	if err := checkDBFile(sd.root, DBFile); err != nil {
		return nil, err
	}
	db, err := OpenBolt(sd.root, DBFile, 0o600, bolt.Options{Timeout: timeout, NoSync: opts.NoSync, FreelistType: bolt.FreelistMapType})
	if err != nil {
		if errors.Is(err, berrors.ErrTimeout) {
			pid, cmd := lockHolder(sd.root, DBFile)
			return nil, &LockedError{Dir: sd.Dir(), PID: pid, Cmd: cmd}
		}
		return nil, fmt.Errorf("open state: open %s: %w", sd.Path(DBFile), err)
	}
	return db, nil
}

// DB is the open bbolt database.
func (s *State) DB() *bolt.DB { return s.db }

// Database is hub.db with the group commit its writers share: the ledger
// and the outbox open on it (OpenSharedLedger, outbox.NewSharedBoltStore)
// so that concurrent turns share fsyncs.
func (s *State) Database() *DB { return s.gc }

// Close closes the database, then the state directory.
func (s *State) Close() error {
	var err error
	if cerr := s.db.Close(); cerr != nil {
		err = fmt.Errorf("close %s: %w", s.Path(DBFile), cerr)
	}
	return errors.Join(err, s.StateDir.Close())
}

var metaBucket = []byte("meta")

// ErrSchemaTooNew is returned when a bucket was written by a newer hub.
var ErrSchemaTooNew = errors.New("bucket schema is newer than this binary")

// EnsureBucket creates bucket name if missing and records its schema version.
// A bucket whose recorded version is newer than version is refused, so an old
// binary never misreads data a newer one wrote. It returns the bucket and the
// version found on disk (equal to version for a new bucket), which callers
// use to migrate older data in the same transaction. In a read-only
// transaction it creates and records nothing, and the bucket is nil when it
// does not exist yet.
func EnsureBucket(tx *bolt.Tx, name string, version int) (*bolt.Bucket, int, error) {
	var meta *bolt.Bucket
	if tx.Writable() {
		var err error
		if meta, err = tx.CreateBucketIfNotExists(metaBucket); err != nil {
			return nil, 0, fmt.Errorf("create meta bucket: %w", err)
		}
	} else {
		meta = tx.Bucket(metaBucket)
	}
	vkey := []byte("schema/" + name)
	found := version
	var recorded []byte
	if meta != nil {
		recorded = meta.Get(vkey)
	}
	if recorded != nil {
		if len(recorded) != 8 {
			return nil, 0, fmt.Errorf("bucket %q: schema version record is corrupt (%d bytes)", name, len(recorded))
		}
		found = int(binary.BigEndian.Uint64(recorded))
		if found > version {
			return nil, found, fmt.Errorf("bucket %q has schema version %d but this hub knows only up to %d: run a newer hub binary: %w", name, found, version, ErrSchemaTooNew)
		}
	}
	if !tx.Writable() {
		return tx.Bucket([]byte(name)), found, nil
	}
	if recorded == nil || found != version {
		var buf [8]byte
		binary.BigEndian.PutUint64(buf[:], uint64(version))
		if err := meta.Put(vkey, buf[:]); err != nil {
			return nil, 0, fmt.Errorf("record schema of %q: %w", name, err)
		}
	}
	b, err := tx.CreateBucketIfNotExists([]byte(name))
	if err != nil {
		return nil, 0, fmt.Errorf("create bucket %q: %w", name, err)
	}
	return b, found, nil
}

// lockHolder finds the process holding a POSIX/flock lock on name in root
// by matching its inode in /proc/locks (Linux). It returns zero values when
// unknown.
func lockHolder(root *os.Root, name string) (int, string) {
	fi, err := root.Stat(name)
	if err != nil {
		return 0, ""
	}
	ino, ok := inodeOf(fi)
	if !ok {
		return 0, ""
	}
	f, err := os.Open("/proc/locks")
	if err != nil {
		return 0, ""
	}
	defer f.Close()
	suffix := ":" + strconv.FormatUint(ino, 10)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// 1: FLOCK  ADVISORY  WRITE 12345 fd:01:1234567 0 EOF
		fields := strings.Fields(sc.Text())
		if len(fields) < 6 {
			continue
		}
		if fields[1] == "->" { // a blocked waiter
			continue
		}
		if !strings.HasSuffix(fields[5], suffix) {
			continue
		}
		pid, err := strconv.Atoi(fields[4])
		if err != nil {
			continue
		}
		cmd, _ := os.ReadFile("/proc/" + fields[4] + "/cmdline")
		return pid, strings.TrimSpace(strings.ReplaceAll(string(cmd), "\x00", " "))
	}
	return 0, ""
}
