package verbs

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"unicode/utf8"

	unix "github.com/a6afc2ce/hermes-hub/internal/posix"

	"github.com/a6afc2ce/hermes-hub/executor"
	"github.com/a6afc2ce/hermes-hub/verbs/confine"
)

// fs.edit replaces exact passages of a text file (docs/files.md): each
// edit's oldText must occur exactly once (or all occurrences are replaced
// with replaceAll), the edits apply in order to the result of the previous
// one, all or none, and the file is written through a temporary file,
// synced and renamed over it (confine.Loc.WriteAtomic), as fs.writeFile
// writes, keeping its permissions (and its owner, where the hub may give
// it). The result is the change as a unified diff and the file's new
// SHA-256, on which the next edit can be made conditional
// (expectedSha256).

// maxEdits bounds the edits of one fs.edit call.
const maxEdits = 100

// maxListedLines bounds the line numbers an ambiguous oldText's error
// lists, and maxCounted the occurrences it counts.
const (
	maxListedLines = 5
	maxCounted     = 1000
)

// FsEditArgs are the arguments of fs.edit.
type FsEditArgs struct {
	Path           string     `json:"path" desc:"Workspace-relative path of an existing text file"`
	OldText        string     `json:"oldText,omitempty" positional:"true" desc:"The exact passage to replace, whitespace and line breaks included; it must occur exactly once unless replaceAll is set"`
	NewText        *string    `json:"newText,omitempty" positional:"true" desc:"What replaces oldText; empty deletes it"`
	ReplaceAll     bool       `json:"replaceAll,omitempty" default:"false" desc:"Replace every occurrence of oldText instead of requiring exactly one"`
	Edits          []TextEdit `json:"edits,omitempty" default:"none" desc:"Instead of oldText and newText: several replacements, each applied to the result of the one before, all or none"`
	DryRun         bool       `json:"dryRun,omitempty" default:"false" desc:"Only return the diff; the file is not written"`
	ExpectedSha256 string     `json:"expectedSha256,omitempty" desc:"Edit only if the file's SHA-256 (hex) is still this one, as fs.stat or an earlier fs.edit returned it; otherwise fail with conflict and the current one"`
}

// TextEdit is one replacement of fs.edit's edits.
type TextEdit struct {
	OldText    string `json:"oldText" desc:"The exact passage to replace; it must occur exactly once unless replaceAll is set"`
	NewText    string `json:"newText" desc:"What replaces it; empty deletes it"`
	ReplaceAll bool   `json:"replaceAll,omitempty" default:"false" desc:"Replace every occurrence instead of requiring exactly one"`
}

// UnmarshalJSON decodes an edit strictly: oldText and newText are
// required and no other key is accepted, so a misspelt newText is an error
// rather than a deletion.
func (e *TextEdit) UnmarshalJSON(b []byte) error {
	var raw struct {
		OldText    *string `json:"oldText"`
		NewText    *string `json:"newText"`
		ReplaceAll bool    `json:"replaceAll"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&raw); err != nil {
		return fmt.Errorf("an edit is {oldText, newText, replaceAll?}: %w", err)
	}
	if raw.OldText == nil || raw.NewText == nil {
		return fmt.Errorf("an edit needs both oldText and newText (newText \"\" deletes the passage)")
	}
	*e = TextEdit{OldText: *raw.OldText, NewText: *raw.NewText, ReplaceAll: raw.ReplaceAll}
	return nil
}

// FsEditResult is the result of fs.edit.
type FsEditResult struct {
	executor.Result
	Diff         string   `json:"diff" desc:"The change as a unified diff (3 lines of context, paths a/<path> and b/<path>); empty when the text did not change"`
	Replacements int      `json:"replacements" desc:"Passages replaced, over all edits"`
	DryRun       bool     `json:"dryRun,omitempty" desc:"Nothing was written: the diff is what the edit would do"`
	Sha256       string   `json:"sha256" desc:"SHA-256 (hex) of the file as it now is (after the edit; unchanged by a dry run): pass it as expectedSha256 to base the next edit on this version"`
	File         *VfsFile `json:"file,omitempty" desc:"The file: size, and in session workspaces its version"`
}

// edits returns the call's replacements, one form or the other, checked.
func (a *FsEditArgs) edits() ([]TextEdit, error) {
	single := a.OldText != "" || a.NewText != nil
	switch {
	case single && len(a.Edits) > 0:
		return nil, executor.Errorf(executor.CodeInvalidArguments, "Give oldText and newText, or edits, not both")
	case single && a.OldText == "":
		return nil, executor.Errorf(executor.CodeInvalidArguments, "oldText is empty: name the passage to replace (fs.writeFile writes a whole file)")
	case single && a.NewText == nil:
		return nil, executor.Errorf(executor.CodeInvalidArguments, "newText is missing: give the text that replaces oldText (\"\" deletes it)")
	case single:
		return []TextEdit{{OldText: a.OldText, NewText: *a.NewText, ReplaceAll: a.ReplaceAll}}, nil
	case len(a.Edits) == 0:
		return nil, executor.Errorf(executor.CodeInvalidArguments, "Nothing to edit: give oldText and newText, or edits: [{oldText, newText}, …]")
	case a.ReplaceAll:
		return nil, executor.Errorf(executor.CodeInvalidArguments, "replaceAll applies to oldText; with edits, set replaceAll on each edit")
	case len(a.Edits) > maxEdits:
		return nil, executor.Errorf(executor.CodeInvalidArguments, "%d edits; fs.edit makes at most %d per call", len(a.Edits), maxEdits)
	}
	for i, e := range a.Edits {
		if e.OldText == "" {
			return nil, executor.Errorf(executor.CodeInvalidArguments, "Edit %d of %d: oldText is empty: name the passage to replace", i+1, len(a.Edits))
		}
	}
	return a.Edits, nil
}

// sha256Hex is the SHA-256 of data in hex.
func sha256Hex(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// checkSha256 checks an expectedSha256 argument's form.
func checkSha256(s string) error {
	if s == "" {
		return nil
	}
	if _, err := hex.DecodeString(s); err != nil || len(s) != 2*sha256.Size {
		return executor.Errorf(executor.CodeInvalidArguments, "expectedSha256 %q is not a SHA-256: give the 64 hexadecimal digits fs.stat (sha256: true) or fs.edit returned", s)
	}
	return nil
}

// Edit implements fs.edit.
func (s *Set) Edit(ctx context.Context, a FsEditArgs) (FsEditResult, error) {
	var res FsEditResult
	edits, err := a.edits()
	if err != nil {
		return res, err
	}
	if err := checkSha256(a.ExpectedSha256); err != nil {
		return res, err
	}
	p, l, release, err := s.usePath(ctx, !a.DryRun, a.Path, confine.FollowFinal)
	if err != nil {
		return res, err
	}
	defer release()
	show := l.Show()
	if err := checkEditSize(edits, p.ws.opts.MaxWriteChars); err != nil {
		return res, err
	}
	f, fi, err := openRegular(l)
	if err != nil {
		return res, err
	}
	defer f.Close()
	data, err := readForEdit(ctx, f, fi, show, p.ws.opts.MaxReadBytes)
	if err != nil {
		return res, err
	}
	if err := needText(p, l, fi, data); err != nil {
		return res, err
	}
	if a.ExpectedSha256 != "" {
		if cur := sha256Hex(data); !strings.EqualFold(a.ExpectedSha256, cur) {
			return res, executor.Errorf(executor.CodeConflict,
				"File %s changed since the version the edit is based on: its SHA-256 is %s, not %s; nothing was written (read it again and edit from what you read)",
				show, cur, strings.ToLower(a.ExpectedSha256))
		}
	}
	text := string(data)
	edited, n, err := applyEdits(text, edits, show, p.ws.opts.MaxReadBytes)
	if err != nil {
		return res, err
	}
	res.Diff, res.Replacements, res.DryRun = unifiedDiff(show, text, edited), n, a.DryRun
	if a.DryRun || edited == text {
		res.Sha256 = sha256Hex(data)
		return res, describeEdited(p, l, show, fi, int64(len(data)), nil, &res)
	}
	err = l.WriteAtomic(fi.Mode().Perm(), true, false, func(tmp *os.File) error {
		if _, err := io.WriteString(tmp, edited); err != nil {
			return err
		}
		keepOwner(tmp, fi)
		return unchangedSince(l, fi, show)
	})
	if err != nil {
		return res, err
	}
	res.Sha256 = sha256Hex([]byte(edited))
	return res, describeEdited(p, l, show, fi, int64(len(edited)), fi, &res)
}

// describeEdited fills res.File; written (the file's description before
// the write) records a write in a session workspace.
func describeEdited(p Place, l *confine.Loc, show string, fi fs.FileInfo, size int64, written fs.FileInfo, res *FsEditResult) error {
	if p.sess == nil {
		res.File = vfsFile(show, EncodingUTF8, size, nil)
		return nil
	}
	var m Meta
	var err error
	if written != nil {
		m, err = p.sess.recordWrite(l.Name(), show, written, "")
	} else {
		m, err = p.sess.metaOf(l.Name(), fi)
	}
	if err != nil {
		return err
	}
	res.File = vfsFile(show, EncodingUTF8, size, &m)
	return nil
}

// checkEditSize applies the write limit (verbs.max_write_chars) to the
// text the edits bring in.
func checkEditSize(edits []TextEdit, limit int) error {
	n := 0
	for _, e := range edits {
		n += utf8.RuneCountInString(e.NewText)
	}
	if n > limit {
		return executor.Errorf(executor.CodeTooLarge,
			"The new text is %d characters; fs.edit writes at most %d per call (verbs.max_write_chars): split the change into several calls", n, limit)
	}
	return nil
}

// readForEdit reads the whole file f, of at most limit bytes.
func readForEdit(ctx context.Context, f *os.File, fi fs.FileInfo, show string, limit int64) ([]byte, error) {
	tooLarge := func(size int64) error {
		return executor.Errorf(executor.CodeTooLarge,
			"File %s is %d bytes; fs.edit edits files of at most %d (verbs.max_read_bytes; fs.writeRange replaces lines of larger files)", show, size, limit)
	}
	if fi.Size() > limit {
		return nil, tooLarge(fi.Size())
	}
	// Room for the size the file had, and a little more if it grew.
	buf := bytes.NewBuffer(make([]byte, 0, fi.Size()+bytes.MinRead))
	if _, err := buf.ReadFrom(io.LimitReader(ctxReader{ctx, f}, limit+1)); err != nil {
		return nil, confine.FSError(err, show, "read")
	}
	if int64(buf.Len()) > limit {
		return nil, tooLarge(int64(buf.Len()))
	}
	return buf.Bytes(), nil
}

// needText refuses a file fs.readFile would return as base64: one with a
// NUL byte or invalid UTF-8, or written as base64 in a session workspace.
func needText(p Place, l *confine.Loc, fi fs.FileInfo, data []byte) error {
	binary := !isText(data)
	if !binary && p.sess != nil {
		m, err := p.sess.metaOf(l.Name(), fi)
		if err != nil {
			return err
		}
		binary = m.Encoding == string(EncodingBase64)
	}
	if binary {
		return executor.Errorf(executor.CodeInvalidArguments,
			"File %s is binary (it holds a NUL byte or invalid UTF-8, or was written as base64); fs.edit edits text files only (fs.writeFile with encoding base64 replaces binary content)", l.Show())
	}
	return nil
}

// keepOwner gives f, the edited file's new content, the owner of the file
// it replaces (fi) where the hub may: an edit by a hub running as root does
// not take a file away from its user. Elsewhere the file is the hub's user's
// after an edit, as after fs.writeFile.
func keepOwner(f *os.File, fi fs.FileInfo) {
	if uid, gid, ok := unix.Owner(fi); ok && (uid != os.Geteuid() || gid != os.Getegid()) {
		_ = f.Chown(uid, gid)
	}
}

// unchangedSince fails when the file at l is no longer the one fi
// described when the edit read it (another program wrote it meanwhile):
// the edit would undo that write.
func unchangedSince(l *confine.Loc, fi fs.FileInfo, show string) error {
	f, now, err := l.Open(unix.O_RDONLY|unix.O_NONBLOCK, 0)
	if err != nil {
		return err
	}
	f.Close()
	same := os.SameFile(fi, now) && now.Size() == fi.Size() && now.ModTime().Equal(fi.ModTime())
	if k1, ok := fileKeyOf(fi); ok && same {
		k2, _ := fileKeyOf(now)
		same = k1 == k2
	}
	if !same {
		return executor.Errorf(executor.CodeConflict, "File %s changed while it was being edited; nothing was written (read it again and retry)", show)
	}
	return nil
}

// applyEdits applies edits in order to text and returns the result and
// the number of passages replaced; the result may be at most limit bytes.
// In a file whose lines end in CRLF, an edit whose texts hold line breaks
// but no CR is matched and written with CRLF line breaks.
func applyEdits(text string, edits []TextEdit, show string, limit int64) (string, int, error) {
	crlf := usesCRLF(text)
	total := 0
	for i, e := range edits {
		old, nw := e.OldText, e.NewText
		if crlf && strings.Contains(old+nw, "\n") && !strings.Contains(old+nw, "\r") {
			old, nw = strings.ReplaceAll(old, "\n", "\r\n"), strings.ReplaceAll(nw, "\n", "\r\n")
		}
		at := occurrences(text, old, maxListedLines+1)
		switch {
		case len(at) == 0:
			return "", 0, executor.Errorf(executor.CodeInvalidArguments, "%s does not occur in %s%s; nothing was changed (it must match exactly, indentation and line breaks included: read the file again)",
				editName(i, len(edits)), show, afterEarlier(i))
		case len(at) > 1 && !e.ReplaceAll:
			return "", 0, ambiguous(text, old, at, editName(i, len(edits))+" occurs", show+afterEarlier(i))
		}
		n := 1
		if e.ReplaceAll {
			n = strings.Count(text, old)
		}
		if size := int64(len(text)) + int64(n)*(int64(len(nw))-int64(len(old))); size > limit {
			return "", 0, executor.Errorf(executor.CodeTooLarge,
				"The edits would make %s %d bytes; fs.edit writes files of at most %d (verbs.max_read_bytes)", show, size, limit)
		}
		total += n
		if e.ReplaceAll {
			text = strings.ReplaceAll(text, old, nw)
		} else {
			text = text[:at[0]] + nw + text[at[0]+len(old):]
		}
	}
	return text, total, nil
}

// ambiguous is the error of old, found at the offsets at (and maybe more
// times) in text: how many times, on which lines.
func ambiguous(text, old string, at []int, what, where string) error {
	n := len(occurrences(text, old, maxCounted))
	times := fmt.Sprintf("%d times", n)
	if n == maxCounted {
		times = fmt.Sprintf("at least %d times", n)
	}
	return executor.Errorf(executor.CodeInvalidArguments, "%s %s in %s (%s); nothing was changed: include more of the surrounding text so that it occurs once, or set replaceAll to replace every occurrence",
		what, times, where, lineList(text, at, n))
}

func editName(i, n int) string {
	if n == 1 {
		return "oldText"
	}
	return fmt.Sprintf("The oldText of edit %d of %d", i+1, n)
}

func afterEarlier(i int) string {
	if i == 0 {
		return ""
	}
	return " after the edits before it"
}

// usesCRLF reports whether the first line of text ends in CRLF.
func usesCRLF(text string) bool {
	i := strings.IndexByte(text, '\n')
	return i > 0 && text[i-1] == '\r'
}

// occurrences returns the offsets of the first max occurrences of sub in
// text, overlapping ones included.
func occurrences(text, sub string, max int) []int {
	var at []int
	for from := 0; len(at) < max; {
		i := strings.Index(text[from:], sub)
		if i < 0 {
			break
		}
		at = append(at, from+i)
		from += i + 1
	}
	return at
}

// lineList names the lines of the first occurrences at (offsets in text)
// of n: "lines 4, 17 and 30", "lines 4, 17, 30, 41, 52, …", "on line 3".
func lineList(text string, at []int, n int) string {
	shown := at[:min(len(at), maxListedLines)]
	var nums []string
	line, pos := 1, 0
	for _, off := range shown {
		line += strings.Count(text[pos:off], "\n")
		pos = off
		if s := strconv.Itoa(line); len(nums) == 0 || nums[len(nums)-1] != s {
			nums = append(nums, s)
		}
	}
	more := ""
	if n > len(shown) {
		more = ", …"
	}
	switch {
	case len(nums) == 1:
		return "on line " + nums[0] + more
	case more != "":
		return "lines " + strings.Join(nums, ", ") + more
	}
	return "lines " + strings.Join(nums[:len(nums)-1], ", ") + " and " + nums[len(nums)-1]
}

var _ executor.Renderer = (*FsEditResult)(nil)

// Render implements executor.Renderer: what happened, then the change as
// a diff block.
func (r *FsEditResult) Render(args any) string {
	p := argsAs[FsEditArgs](args).Path
	n := int64(r.Replacements)
	count := fmt.Sprintf("%d %s", n, plural(n, "replacement", "replacements"))
	var head string
	switch {
	case r.Diff == "":
		return fmt.Sprintf("`%s` is unchanged: the new text is the old one (%s).", p, count)
	case r.DryRun:
		head = fmt.Sprintf("Dry run: `%s` would change as below (%s); nothing was written.", p, count)
	default:
		head = fmt.Sprintf("✓ Edited `%s`%s: %s.", p, versionNote(r.File), count)
	}
	return head + "\n" + executor.Fence(r.Diff, "diff")
}
