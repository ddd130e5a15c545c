package store

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// holdEnv makes the test binary, run as a child, open the state directory it
// names, print "ready" and hold the lock until its stdin closes.
const holdEnv = "STORE_TEST_HOLD_STATE"

func TestMain(m *testing.M) {
	if dir := os.Getenv(holdEnv); dir != "" {
		os.Exit(holdState(dir))
	}
	if run := os.Getenv(holdRunEnv); run != "" {
		os.Exit(holdRun(run))
	}
	os.Exit(m.Run())
}

func holdState(dir string) int {
	s, err := Open(dir, Options{})
	if err != nil {
		fmt.Println("error:", err)
		return 1
	}
	fmt.Println("ready")
	io.Copy(io.Discard, os.Stdin)
	if err := s.Close(); err != nil {
		fmt.Println("error:", err)
		return 1
	}
	return 0
}

func TestOpenCreatesLayout(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, d := range []string{"", "pma", "chat", FlowsDir, ProcDir} {
		fi, err := os.Stat(filepath.Join(dir, d))
		if err != nil {
			t.Fatal(err)
		}
		if !fi.IsDir() || fi.Mode().Perm() != 0o700 {
			t.Errorf("%q: mode %v, want a directory with 0700", d, fi.Mode())
		}
	}
	fi, err := os.Stat(filepath.Join(dir, DBFile))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("hub.db mode %v, want 0600", fi.Mode().Perm())
	}
	if !filepath.IsAbs(s.Dir()) || s.Path("pma", "x") != filepath.Join(s.Dir(), "pma", "x") {
		t.Errorf("Dir %q / Path %q", s.Dir(), s.Path("pma", "x"))
	}
}

func TestOpenLockedByAnotherProcess(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), holdEnv+"="+dir)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		stdin.Close()
		cmd.Wait()
	}()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "ready" {
		t.Fatalf("child said %q, %v", line, err)
	}

	_, err = Open(dir, Options{LockTimeout: 200 * time.Millisecond})
	var le *LockedError
	if !errors.As(err, &le) {
		t.Fatalf("Open while held: %v, want *LockedError", err)
	}
	if !errors.Is(err, ErrLocked) {
		t.Error("errors.Is(err, ErrLocked) is false")
	}
	abs, _ := filepath.Abs(dir)
	if le.Dir != abs {
		t.Errorf("LockedError.Dir = %q, want %q", le.Dir, abs)
	}
	if le.PID != cmd.Process.Pid {
		t.Errorf("LockedError.PID = %d, want the child's %d", le.PID, cmd.Process.Pid)
	}
	msg := err.Error()
	if !strings.Contains(msg, abs) || !strings.Contains(msg, strconv.Itoa(cmd.Process.Pid)) {
		t.Errorf("message %q does not name the directory and the pid", msg)
	}

	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("child: %v", err)
	}
	s, err := Open(dir, Options{LockTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatalf("Open after the child exited: %v", err)
	}
	s.Close()
}

func TestEnsureBucket(t *testing.T) {
	s, err := Open(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	db := s.DB()
	ensure := func(name string, version int) (int, error) {
		var found int
		err := db.Update(func(tx *bolt.Tx) error {
			b, f, err := EnsureBucket(tx, name, version)
			if err == nil && b == nil {
				return errors.New("nil bucket")
			}
			found = f
			return err
		})
		return found, err
	}
	steps := []struct {
		name      string
		version   int
		wantFound int
		wantErr   error
	}{
		{"outbox", 1, 1, nil}, // new bucket
		{"outbox", 1, 1, nil}, // same version again
		{"outbox", 2, 1, nil}, // upgrade: reports the old version
		{"outbox", 2, 2, nil}, // recorded now
		{"outbox", 1, 2, ErrSchemaTooNew},
		{"ledger", 3, 3, nil}, // buckets are versioned independently
	}
	for i, st := range steps {
		found, err := ensure(st.name, st.version)
		if !errors.Is(err, st.wantErr) || (st.wantErr == nil) != (err == nil) {
			t.Fatalf("step %d: err %v, want %v", i, err, st.wantErr)
		}
		if found != st.wantFound {
			t.Errorf("step %d: found %d, want %d", i, found, st.wantFound)
		}
		if err != nil && !strings.Contains(err.Error(), "newer hub") {
			t.Errorf("step %d: message %q does not say what to do", i, err)
		}
	}

	// Read-only transactions see versions but create nothing.
	err = db.View(func(tx *bolt.Tx) error {
		if b, found, err := EnsureBucket(tx, "outbox", 2); err != nil || b == nil || found != 2 {
			return fmt.Errorf("existing: %v %v %d", b, err, found)
		}
		if b, _, err := EnsureBucket(tx, "missing", 1); err != nil || b != nil {
			return fmt.Errorf("missing: %v %v", b, err)
		}
		if _, _, err := EnsureBucket(tx, "outbox", 1); !errors.Is(err, ErrSchemaTooNew) {
			return fmt.Errorf("too new in a read-only tx: %v", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	// A damaged version record is an error, not a guess.
	if err := db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(metaBucket).Put([]byte("schema/ledger"), []byte{1})
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := ensure("ledger", 3); err == nil || !strings.Contains(err.Error(), "corrupt") {
		t.Errorf("corrupt version record: %v", err)
	}
}
