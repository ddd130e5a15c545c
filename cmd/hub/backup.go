package main

import (
	"bufio"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/a6afc2ce/hermes-hub/config"
	"github.com/a6afc2ce/hermes-hub/store"
)

const backupUsage = `hub backup FILE [--proc] [--gzip] [--config FILE] [--state DIR]

Writes one archive (tar; gzip with --gzip or when FILE ends in .gz or .tgz)
of the state the hub needs: hub.db as one read transaction saw it, the
delivery targets and the rest of pma/, the channel directory, the hub's NATS
key and every mirror run; the output of proc.run calls with --proc. Session
workspaces are not included. Works while the hub runs (the running hub
writes the archive through its admin socket) and while it does not. FILE
appears only once the archive is whole and checked (it is written beside
FILE, fsynced and renamed), with mode 0600: it holds secrets (web sessions,
grants, the NATS key). Restore it with ` + "`hub restore FILE`" + ` into an empty
state directory (docs/state.md, "Backups and restore").`

func runBackup(env *cliEnv, args []string) error {
	var proc, gz *bool
	return withAdmin(env, "backup", backupUsage, args, func(f *flagSet) {
		proc = f.Bool("proc", false, "include the output of proc.run calls (proc/)")
		gz = f.Bool("gzip", false, "compress the archive (default: when FILE ends in .gz or .tgz)")
	}, func(c *adminClient, pos []string) error {
		if len(pos) != 1 {
			return usagef("give the archive to write: hub backup FILE")
		}
		file := pos[0]
		q := url.Values{}
		if *proc {
			q.Set("proc", "true")
		}
		resp, err := c.stream("POST", "/api/backup", q, nil)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		compress := *gz || strings.HasSuffix(file, ".gz") || strings.HasSuffix(file, ".tgz")
		m, size, err := writeArchive(file, resp.Body, compress)
		if err != nil {
			return err
		}
		extra := ""
		if m.Proc {
			extra = ", proc.run outputs"
		}
		fmt.Fprintf(env.stdout, "Backed up %d files (hub.db, %d %s%s) to %s (%s).\n",
			len(m.Members), len(m.Runs), plural(len(m.Runs), "mirror run", "mirror runs"), extra, file, humanBytes(size))
		if len(m.Skipped) > 0 {
			fmt.Fprintf(env.stdout, "Left out (not regular files): %s\n", strings.Join(m.Skipped, ", "))
		}
		return nil
	})
}

// writeArchive writes the backup read from r to path, compressed with gz:
// into a temporary file beside it (0600), checked as it is written (every
// member's checksum against the manifest, which must be there), fsynced,
// then renamed over path. On any error path is untouched and the temporary
// file removed. It returns the manifest and the file's size.
func writeArchive(path string, r io.Reader, gz bool) (m store.BackupManifest, size int64, err error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	tmp, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return m, 0, fmt.Errorf("write %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if err := tmp.Chmod(0o600); err != nil {
		return m, 0, fmt.Errorf("write %s: %w", path, err)
	}
	bw := bufio.NewWriterSize(tmp, 1<<20)
	var out io.Writer = bw
	var zw *gzip.Writer
	if gz {
		zw = gzip.NewWriter(bw)
		out = zw
	}
	tee := io.TeeReader(r, out)
	// The hub is trusted with its own size: no bound but the disk's.
	m, err = store.VerifyBackup(tee, store.RestoreOptions{MaxBytes: math.MaxInt64, MaxMembers: math.MaxInt})
	if err == nil {
		_, err = io.Copy(io.Discard, tee) // the end of the archive
	}
	if err != nil {
		return m, 0, fmt.Errorf("%w; %s was not written", err, path)
	}
	if zw != nil {
		if err := zw.Close(); err != nil {
			return m, 0, fmt.Errorf("write %s: %w", path, err)
		}
	}
	if err := bw.Flush(); err != nil {
		return m, 0, fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		return m, 0, fmt.Errorf("write %s: sync: %w", path, err)
	}
	fi, err := tmp.Stat()
	if err != nil {
		return m, 0, fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return m, 0, fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return m, 0, fmt.Errorf("write %s: %w", path, err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return m, 0, fmt.Errorf("write %s: sync directory: %w", path, err)
	}
	defer root.Close()
	return m, fi.Size(), store.SyncDir(root, ".")
}

const restoreUsage = `hub restore FILE [--state DIR] [--config FILE] [--max-bytes SIZE]

Restores an archive written by ` + "`hub backup`" + ` into the state directory
(state_dir, or --state), which must be empty or missing: restore never
mixes a backup with another state. Every member is checked before it is
written (regular files only, named inside the state's layout, within
--max-bytes in all) and every checksum against the archive's manifest; an
archive that is cut short, altered or hostile is refused and nothing is
left behind. Then start the hub on it with ` + "`hub serve`" + `.`

func runRestore(env *cliEnv, args []string) error {
	f := newFlags(env, "restore", restoreUsage)
	var cf commonFlags
	cf.register(f, false)
	maxBytes := f.String("max-bytes", "64GiB", "refuse an archive whose files hold more than this in all")
	pos, err := f.parse(args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("give the archive to restore: hub restore FILE")
	}
	limit, err := config.ParseSize(*maxBytes)
	if err != nil || limit == 0 {
		return usagef("--max-bytes: %q is not a size (accepted: 64GiB, 500MiB, …)", *maxBytes)
	}
	stateDir := cf.state
	if stateDir == "" {
		cfg, err := loadConfig(cf)
		if err != nil {
			return err
		}
		stateDir = cfg.StateDir
	}
	file, err := os.Open(pos[0])
	if err != nil {
		return err
	}
	defer file.Close()
	r, err := archiveReader(file)
	if err != nil {
		return fmt.Errorf("%s: %w", pos[0], err)
	}
	m, err := store.RestoreBackup(r, stateDir, store.RestoreOptions{MaxBytes: limit})
	if err != nil {
		return fmt.Errorf("%s: %w", pos[0], err)
	}
	fmt.Fprintf(env.stdout, "Restored %d files (hub.db, %d %s) into %s, from a backup of %s (hub %s).\nStart the hub on it: hub serve --state %s\n",
		len(m.Members), len(m.Runs), plural(len(m.Runs), "mirror run", "mirror runs"),
		stateDir, m.Created.Local().Format("2006-01-02 15:04:05"), m.HubVersion, stateDir)
	return nil
}

// archiveReader reads a tar archive, gzipped or not.
func archiveReader(f io.Reader) (io.Reader, error) {
	br := bufio.NewReader(f)
	head, err := br.Peek(2)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	if len(head) == 2 && head[0] == 0x1f && head[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", store.ErrBadBackup, err)
		}
		return zr, nil
	}
	return br, nil
}
