package verbs

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"

	"github.com/a6afc2ce/hermes-hub/executor"
	"github.com/a6afc2ce/hermes-hub/verbs/confine"
)

// fs.stat describes one entry of the workspace: what a path leads to (a
// symbolic link is followed inside the workspace, and said to be one), its
// size, permissions and modification time; for a file its line count when
// the line cache knows it (or countLines asks to count it) and, on
// request, its SHA-256, streamed through the hash.

// FsStatArgs are the arguments of fs.stat.
type FsStatArgs struct {
	Path       string `json:"path" desc:"Workspace-relative path; \".\" is the workspace root"`
	Sha256     bool   `json:"sha256,omitempty" default:"false" desc:"Files: also compute the SHA-256 of the content (reads the whole file)"`
	CountLines bool   `json:"countLines,omitempty" default:"false" desc:"Files: count the lines when their count is not known yet (reads the whole file)"`
}

// EntryType is what a path leads to.
type EntryType string

// Entry types.
const (
	TypeFile      EntryType = "file"
	TypeDirectory EntryType = "directory"
	TypeNamedPipe EntryType = "namedPipe"
	TypeSocket    EntryType = "socket"
	TypeDevice    EntryType = "device"
	TypeOther     EntryType = "other"
)

// Values implements executor.Enum.
func (EntryType) Values() []string {
	return []string{string(TypeFile), string(TypeDirectory), string(TypeNamedPipe), string(TypeSocket), string(TypeDevice), string(TypeOther)}
}

// FsStatResult is the result of fs.stat.
type FsStatResult struct {
	executor.Result
	Type       EntryType `json:"type" desc:"What the path leads to"`
	Symlink    bool      `json:"symlink,omitempty" desc:"The path is a symbolic link (leading inside the workspace); the other fields describe its target"`
	SizeBytes  int64     `json:"sizeBytes" desc:"Size in bytes"`
	Mode       string    `json:"mode" desc:"Permission bits in octal, like 0644 (4000 setuid, 2000 setgid, 1000 sticky)"`
	ModifiedAt string    `json:"modifiedAt" desc:"Last modification, UTC with milliseconds, like 2026-01-02T03:04:05.678Z"`
	LineCount  *int      `json:"lineCount,omitempty" desc:"Files: the number of lines, when known (counted before and unchanged since) or counted at countLines' request"`
	Sha256     string    `json:"sha256,omitempty" desc:"Files, with sha256: the SHA-256 of the content in hex, as fs.edit's expectedSha256 takes it"`
	Version    int64     `json:"version,omitempty" desc:"Files in session workspaces: the file's version"`
	CreatedAt  string    `json:"createdAt,omitempty" desc:"Files in session workspaces: when the file was created, UTC with milliseconds"`
}

// Stat implements fs.stat.
func (s *Set) Stat(ctx context.Context, a FsStatArgs) (FsStatResult, error) {
	var res FsStatResult
	p, l, release, err := s.usePath(ctx, false, a.Path, confine.FollowFinal|confine.AllowRoot)
	if err != nil {
		return res, err
	}
	defer release()
	show := l.Show()
	if res.Symlink, err = finalIsLink(p.ws.root, a.Path); err != nil {
		return res, err
	}
	fi, err := l.Stat()
	if err != nil {
		return res, confine.FSError(err, show, "stat")
	}
	if fi.Mode().IsRegular() {
		f, ofi, err := openRegular(l)
		if err != nil {
			return res, err
		}
		defer f.Close()
		fi = ofi
		if err := s.describeFile(ctx, p, l, f, fi, a, &res); err != nil {
			return res, err
		}
	}
	res.Type = entryType(fi.Mode())
	res.SizeBytes = fi.Size()
	res.Mode = fmt.Sprintf("%04o", unixMode(fi.Mode()))
	res.ModifiedAt = fmtTime(fi.ModTime())
	return res, nil
}

// finalIsLink reports whether the last element of path is a symbolic link.
func finalIsLink(root *confine.Root, path string) (bool, error) {
	l, err := root.Locate(path, confine.AllowRoot|confine.StatOnly)
	if err != nil {
		return false, err
	}
	defer l.Close()
	fi, err := l.Located()
	if err != nil {
		return false, confine.FSError(err, l.Show(), "stat")
	}
	return fi.Mode()&fs.ModeSymlink != 0, nil
}

// describeFile fills what fs.stat says of a file only: its line count,
// SHA-256 and, in a session workspace, its version.
func (s *Set) describeFile(ctx context.Context, p Place, l *confine.Loc, f *os.File, fi fs.FileInfo, a FsStatArgs, res *FsStatResult) error {
	show := l.Show()
	if n, ok := s.lines.get(fi); ok {
		res.LineCount = &n
	} else if a.CountLines {
		n, err := s.countFile(ctx, f, fi)
		if err != nil {
			return confine.FSError(err, show, "read")
		}
		res.LineCount = &n
	}
	if a.Sha256 {
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return confine.FSError(err, show, "read")
		}
		h := sha256.New()
		if _, err := io.Copy(h, ctxReader{ctx, f}); err != nil {
			return confine.FSError(err, show, "read")
		}
		res.Sha256 = hex.EncodeToString(h.Sum(nil))
	}
	if p.sess != nil {
		m, err := p.sess.metaOf(l.Name(), fi)
		if err != nil {
			return err
		}
		res.Version, res.CreatedAt = m.Version, fmtTime(m.CreatedAt)
	}
	return nil
}

// entryType names what mode describes.
func entryType(m fs.FileMode) EntryType {
	switch {
	case m.IsRegular():
		return TypeFile
	case m.IsDir():
		return TypeDirectory
	case m&fs.ModeNamedPipe != 0:
		return TypeNamedPipe
	case m&fs.ModeSocket != 0:
		return TypeSocket
	case m&fs.ModeDevice != 0:
		return TypeDevice
	}
	return TypeOther
}

// unixMode is m's permission and special bits as the system numbers them.
func unixMode(m fs.FileMode) uint32 {
	u := uint32(m.Perm())
	if m&fs.ModeSetuid != 0 {
		u |= 0o4000
	}
	if m&fs.ModeSetgid != 0 {
		u |= 0o2000
	}
	if m&fs.ModeSticky != 0 {
		u |= 0o1000
	}
	return u
}

var _ executor.Renderer = (*FsStatResult)(nil)

// Render implements executor.Renderer: a short table in a code block.
func (r *FsStatResult) Render(args any) string {
	p := argsAs[FsStatArgs](args).Path
	kind := string(r.Type)
	if r.Symlink {
		kind += " (through a symbolic link)"
	}
	rows := [][2]string{
		{"type", kind},
		{"size", fmt.Sprintf("%d %s", r.SizeBytes, plural(r.SizeBytes, "byte", "bytes"))},
		{"mode", r.Mode},
		{"modified", r.ModifiedAt},
	}
	if r.LineCount != nil {
		rows = append(rows, [2]string{"lines", fmt.Sprint(*r.LineCount)})
	}
	if r.Sha256 != "" {
		rows = append(rows, [2]string{"sha256", r.Sha256})
	}
	if r.Version > 0 {
		rows = append(rows, [2]string{"version", fmt.Sprintf("%d (created %s)", r.Version, r.CreatedAt)})
	}
	return fmt.Sprintf("`%s`\n%s", p, executor.Fence(strings.TrimRight(table(rows), "\n"), ""))
}
