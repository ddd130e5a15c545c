package store

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"unicode/utf8"
)

// WriteFileAtomic replaces the file name in root with data so that a reader
// (or a crash) sees either the old file or the new one, never a mix: it
// writes a temporary file in the same directory, fsyncs it, renames it over
// name and fsyncs the directory, all through root. A symbolic link at name
// is replaced, never followed. The directory must exist.
func WriteFileAtomic(root *os.Root, name string, data []byte, perm os.FileMode) error {
	return CopyFileAtomic(root, name, bytes.NewReader(data), perm)
}

// CopyFileAtomic is WriteFileAtomic with the content read from r.
func CopyFileAtomic(root *os.Root, name string, r io.Reader, perm os.FileMode) (err error) {
	path := filepath.Join(root.Name(), name)
	dir, base := filepath.Split(name)
	if dir == "" {
		dir = "."
	}
	f, tmp, err := createTemp(root, dir, "."+base+tempInfix)
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			f.Close()
			root.Remove(tmp)
		}
	}()
	if err := f.Chmod(perm); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if _, err := io.Copy(f, r); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("write %s: sync: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := root.Rename(tmp, name); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := SyncDir(root, dir); err != nil {
		// The rename happened; only its durability is in doubt.
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// tempInfix follows the name of the file a temporary file replaces.
const tempInfix = ".tmp-"

// createTemp creates a new file named prefix and a random suffix in the
// directory dir of root, owner-only, and returns it with its name in root.
func createTemp(root *os.Root, dir, prefix string) (*os.File, string, error) {
	for try := 0; ; try++ {
		var b [6]byte
		_, _ = rand.Read(b[:]) // crypto/rand.Read does not fail
		name := filepath.Join(dir, prefix+hex.EncodeToString(b[:]))
		f, err := root.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, fs.ErrExist) && try < 100 {
			continue
		}
		return f, name, err
	}
}

// SyncDir fsyncs the directory dir of root, so that a file created or
// renamed in it survives a crash.
func SyncDir(root *os.Root, dir string) error {
	d, err := root.Open(dir)
	if err != nil {
		return fmt.Errorf("sync directory: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync directory %s: %w", d.Name(), err)
	}
	return nil
}

// ErrCorruptFile matches a *CorruptFileError with errors.Is.
var ErrCorruptFile = errors.New("state file is corrupt")

// CorruptFileError reports a state file that does not parse or holds an
// invalid entry. The file is left as it is: nothing overwrites it until an
// operator repairs it or moves it away.
type CorruptFileError struct {
	Path string
	// Line and Column (1-based; the column counts characters) locate the
	// problem; both are 0 when the position is unknown.
	Line, Column int
	Err          error
	// Hint replaces the default advice on how to fix the file, when set.
	Hint string
}

func (e *CorruptFileError) Error() string {
	where := e.Path
	if e.Line > 0 {
		where = fmt.Sprintf("%s:%d:%d", e.Path, e.Line, e.Column)
	}
	hint := e.Hint
	if hint == "" {
		hint = "repair it, or move it away to start from an empty file"
	}
	return fmt.Sprintf("%s: %v; the file was left untouched: %s", where, e.Err, hint)
}

// Unwrap returns the underlying parse or validation error.
func (e *CorruptFileError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrCorruptFile) true for a *CorruptFileError.
func (e *CorruptFileError) Is(target error) bool { return target == ErrCorruptFile }

// ErrFileTooNew is wrapped by the error for a state file whose version is
// newer than this binary understands.
var ErrFileTooNew = errors.New("state file version is newer than this binary")

// ReadJSON decodes the JSON file name of root into v. A missing file is
// (false, nil). A file that does not parse, or has a value of the wrong type,
// is a *CorruptFileError naming the path and the line:column of the problem.
// Unknown fields are ignored so that an older binary can read a newer file
// of the same version.
func ReadJSON(root *os.Root, name string, v any) (exists bool, err error) {
	data, ok, err := readFileData(root, name)
	if err != nil || !ok {
		return false, err
	}
	return true, decodeJSON(filepath.Join(root.Name(), name), data, v)
}

// checkVersion refuses a file written by a newer binary (or with a nonsense
// version). A missing version (0) reads as version 1.
func checkVersion(path string, version, known int) error {
	if version < 0 {
		return &CorruptFileError{Path: path, Err: fmt.Errorf("version %d is not valid (this hub writes version %d)", version, known)}
	}
	if version > known {
		return fmt.Errorf("%s has version %d but this hub knows only up to version %d: run a newer hub binary; the file was left untouched: %w", path, version, known, ErrFileTooNew)
	}
	return nil
}

// corruptJSON turns a json.Unmarshal error into a *CorruptFileError with a
// position and a message that does not talk about Go types.
func corruptJSON(path string, data []byte, err error) error {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		msg := se.Error()
		// Offset counts the bytes read, including the offending one.
		off := int(se.Offset) - 1
		if se.Offset >= int64(len(data)) {
			msg = "unexpected end of file (the JSON is truncated)"
			off = len(bytes.TrimRight(data, " \t\r\n")) // just after the last character
		}
		line, col := position(data, off)
		return &CorruptFileError{Path: path, Line: line, Column: col, Err: errors.New(msg)}
	case errors.As(err, &te):
		start := valueStart(data, int(te.Offset))
		line, col := position(data, start)
		field := te.Field
		if field == "" {
			field = "top level"
		}
		return &CorruptFileError{Path: path, Line: line, Column: col,
			Err: fmt.Errorf("%s: found %s, expected %s", field, te.Value, describeType(te.Type))}
	}
	return &CorruptFileError{Path: path, Err: err}
}

// position converts a byte offset into a 1-based line and character column.
func position(data []byte, off int) (line, col int) {
	if off > len(data) {
		off = len(data)
	}
	if off < 0 {
		off = 0
	}
	head := data[:off]
	line = 1 + bytes.Count(head, []byte{'\n'})
	lineStart := bytes.LastIndexByte(head, '\n') + 1
	return line, utf8.RuneCount(head[lineStart:]) + 1
}

// valueStart finds where the JSON value that an UnmarshalTypeError points at
// begins. The decoder reports the offset just after a scalar, or just after
// the opening bracket of an array or object.
func valueStart(data []byte, off int) int {
	if off <= 0 || off > len(data) {
		return max(0, min(off, len(data)))
	}
	end := off - 1
	switch c := data[end]; {
	case c == '[' || c == '{':
		return end
	case c == '"':
		for j := end - 1; j >= 0; j-- {
			if data[j] != '"' {
				continue
			}
			bs := 0
			for k := j - 1; k >= 0 && data[k] == '\\'; k-- {
				bs++
			}
			if bs%2 == 0 {
				return j
			}
		}
		return end
	default:
		j := end
		for j > 0 && isScalarByte(data[j-1]) {
			j--
		}
		return j
	}
}

func isScalarByte(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '.' || c == '+' || c == '-'
}

// describeType names a Go type the way a person editing JSON thinks of it.
func describeType(t reflect.Type) string {
	if t == nil {
		return "a different type"
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Map, reflect.Struct:
		if t.PkgPath() == "time" && t.Name() == "Time" {
			return "an RFC 3339 time string"
		}
		return "an object"
	case reflect.Pointer:
		return describeType(t.Elem())
	}
	return "a " + t.Kind().String()
}

// arrayElementOffsets returns the byte offset where each element of the array
// under the top-level field starts, so that a validation error can name the
// line of the entry. It returns nil if the data is not shaped as expected.
func arrayElementOffsets(data []byte, field string) []int {
	dec := json.NewDecoder(bytes.NewReader(data))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil
		}
		if key, _ := tok.(string); key != field {
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return nil
			}
			continue
		}
		if tok, err := dec.Token(); err != nil || tok != json.Delim('[') {
			return nil
		}
		var offs []int
		for dec.More() {
			off := int(dec.InputOffset())
			for off < len(data) && (data[off] == ' ' || data[off] == '\t' || data[off] == '\r' || data[off] == '\n' || data[off] == ',') {
				off++
			}
			offs = append(offs, off)
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return nil
			}
		}
		return offs
	}
	return nil
}

// entryError is a *CorruptFileError for entry i of a top-level array.
func entryError(path string, data []byte, field string, i int, err error) *CorruptFileError {
	e := &CorruptFileError{Path: path, Err: fmt.Errorf("%s[%d]: %w", field, i, err)}
	if offs := arrayElementOffsets(data, field); i < len(offs) {
		e.Line, e.Column = position(data, offs[i])
	}
	return e
}

// fileStamp identifies one version of a file on disk, so that a writer can
// tell whether someone else replaced or edited it since it was loaded.
type fileStamp struct {
	info os.FileInfo // nil when the file did not exist
}

func stampOf(root *os.Root, name string) (fileStamp, error) {
	fi, err := root.Lstat(name)
	if errors.Is(err, fs.ErrNotExist) {
		return fileStamp{}, nil
	}
	if err != nil {
		return fileStamp{}, fmt.Errorf("stat %s: %w", filepath.Join(root.Name(), name), err)
	}
	return fileStamp{info: fi}, nil
}

func (s fileStamp) same(o fileStamp) bool {
	if s.info == nil || o.info == nil {
		return s.info == nil && o.info == nil
	}
	return os.SameFile(s.info, o.info) && s.info.Size() == o.info.Size() && s.info.ModTime().Equal(o.info.ModTime())
}

// readFileData reads the file name of root, returning nil data and false
// when it is missing. A symbolic link there is refused, not followed: the
// hub's own files are never links.
func readFileData(root *os.Root, name string) ([]byte, bool, error) {
	path := filepath.Join(root.Name(), name)
	if err := regularOrMissing(root, name); err != nil {
		return nil, false, err
	}
	f, err := openRegular(root, name, os.O_RDONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("read %s: %w", path, err)
	}
	defer f.Close()
	data, err := io.ReadAll(f)
	if err != nil {
		return nil, false, fmt.Errorf("read %s: %w", path, err)
	}
	return data, true, nil
}

// decodeJSON is ReadJSON on data already read.
func decodeJSON(path string, data []byte, v any) error {
	if err := json.Unmarshal(data, v); err != nil {
		return corruptJSON(path, data, err)
	}
	return nil
}

// marshalFile renders v as the house format for state files: two-space
// indented JSON with a trailing newline.
// HTML characters are kept as they are ("R&D", not "R\u0026D").
func marshalFile(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
