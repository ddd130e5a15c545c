package verbs_test

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/a6afc2ce/hermes-hub/verbs"
)

// The crash test of fs.edit: a child process (this test binary, run again)
// edits a large file back and forth between two versions, and the parent
// kills it (SIGKILL) at random moments, many times. After every kill the
// file must be one version or the other, whole: never a mix, never cut.
const (
	editCrashEnv   = "HUB_EDIT_CRASH_DIR"
	editCrashFile  = "big.txt"
	editCrashKills = 25
	editCrashLines = 150_000 // about 9 MB
)

// editCrashVersions are the file's two versions: the same lines but one,
// in the middle, which says which version it is.
func editCrashVersions() (a, b string) {
	var sb strings.Builder
	for i := 1; i <= editCrashLines; i++ {
		if i == editCrashLines/2 {
			sb.WriteString("state: @@@\n")
			continue
		}
		fmt.Fprintf(&sb, "line %07d: the quick brown fox jumps over the lazy dog\n", i)
	}
	s := sb.String()
	return strings.Replace(s, "@@@", strings.Repeat("A", 40), 1), strings.Replace(s, "@@@", strings.Repeat("B", 40)+" and more", 1)
}

func TestEditCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test skipped in short mode")
	}
	dir := t.TempDir()
	va, vb := editCrashVersions()
	p := filepath.Join(dir, editCrashFile)
	if err := os.WriteFile(p, []byte(va), 0o644); err != nil {
		t.Fatal(err)
	}
	seed := rand.Uint64()
	rng := rand.New(rand.NewPCG(seed, 2))
	t.Logf("seed %d", seed)
	seen := map[string]int{}
	for kill := range editCrashKills {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), editCrashEnv+"="+dir)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Wait until it edits, then let it run for a random time.
		started := make(chan bool, 1)
		go func() {
			sc := bufio.NewScanner(out)
			ok := false
			for sc.Scan() {
				if !ok && strings.HasPrefix(sc.Text(), "editing") {
					ok = true
					started <- true
				}
			}
			if !ok {
				started <- false
			}
		}()
		if !<-started {
			cmd.Wait()
			t.Fatalf("kill %d: the child never edited: %s", kill, stderr.String())
		}
		time.Sleep(time.Duration(rng.IntN(400)) * time.Millisecond)
		if err := cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		cmd.Wait()
		got, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		switch string(got) {
		case va:
			seen["A"]++
		case vb:
			seen["B"]++
		default:
			t.Fatalf("kill %d: the file is neither version: %d bytes (versions: %d and %d)", kill, len(got), len(va), len(vb))
		}
		// A killed edit leaves its temporary file; it is not the file.
		tmps, _ := filepath.Glob(filepath.Join(dir, "."+editCrashFile+".tmp-*"))
		for _, tmp := range tmps {
			os.Remove(tmp)
		}
	}
	t.Logf("%d kills: version A %d times, version B %d times", editCrashKills, seen["A"], seen["B"])
}

// editCrashChild is the child of TestEditCrash, run by TestMain when
// editCrashEnv names the workspace: it edits the file from one version to
// the other and back until it is killed.
func editCrashChild(dir string) error {
	ws, err := verbs.OpenWorkspace(dir, verbs.WorkspaceOptions{MaxReadBytes: 64 << 20})
	if err != nil {
		return err
	}
	// Beside the workspace, in the parent test's temporary directory.
	state := filepath.Join(filepath.Dir(dir), "child-state")
	if err := os.MkdirAll(state, 0o700); err != nil {
		return err
	}
	s, err := verbs.NewSet(ws, verbs.DefaultOptions(state))
	if err != nil {
		return err
	}
	a, b := "state: "+strings.Repeat("A", 40), "state: "+strings.Repeat("B", 40)+" and more"
	for i := 0; ; i++ {
		cur, err := os.ReadFile(filepath.Join(dir, editCrashFile))
		if err != nil {
			return err
		}
		from, to := a, b
		if strings.Contains(string(cur), b) {
			from, to = b, a
		}
		fmt.Printf("editing %d\n", i)
		if _, err := s.Edit(context.Background(), verbs.FsEditArgs{Path: editCrashFile, OldText: from, NewText: &to}); err != nil {
			return err
		}
	}
}
