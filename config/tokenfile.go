package config

import (
	"fmt"
	"io"
	"os"
	"strings"
)

// secretFile is a key naming a file that holds a secret, or what a secret
// is checked against (a certificate): every one is out of the verbs' reach
// (ProtectedFiles). A token file's content becomes its token
// (readTokenFiles). Sections whose keys name such files list them with a
// secretFiles method.
type secretFile struct {
	key  string // the key naming the file: web.token_file
	path string // "" when not set
	// tokenKey is the key of the token the file holds (web.token), token
	// its value as written, setToken how to set it (nil when the token is
	// not used, and not read); unset for a file that holds no token (a
	// certificate, a private key).
	tokenKey string
	token    Secret
	setToken func(Secret)
}

// secretFiler is a section whose keys name secret files.
type secretFiler interface {
	secretFiles() []secretFile
}

// secretFiles lists the secret files of every section, in section order.
func (c *Config) secretFiles() []secretFile {
	var out []secretFile
	for _, s := range c.sections() {
		if f, ok := s.(secretFiler); ok {
			out = append(out, f.secretFiles()...)
		}
	}
	return out
}

// readTokenFiles reads every *_token_file setting into its token. A token
// file holds the token alone (a trailing newline is dropped), as systemd
// credentials do (${CREDENTIALS_DIRECTORY}/name), and must not be readable
// by its group or other users. Errors name the key and the file, never the
// token.
func (c *Config) readTokenFiles() error {
	v := &validator{src: c.src}
	for _, f := range c.secretFiles() {
		if f.path == "" || f.tokenKey == "" {
			continue
		}
		if f.token.IsSet() {
			v.bad(f.tokenKey, " and %s are both set: keep one (accepted: the token itself, or a file holding it)", f.key)
			continue
		}
		if f.setToken == nil {
			continue // a token this command does not use (StdioOnly)
		}
		s, err := readTokenFile(f.path)
		if err != nil {
			v.bad(f.key, ": %v", err)
			continue
		}
		f.setToken(NewSecret(s))
	}
	return v.err()
}

func readTokenFile(name string) (string, error) {
	f, err := os.Open(name)
	if err != nil {
		return "", err // *PathError: names the file, not its content
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", err
	}
	if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("%s is not a regular file", name)
	}
	if perm := fi.Mode().Perm(); perm&0o044 != 0 {
		return "", fmt.Errorf("%s has mode %04o, readable by other users: chmod 600 (or 400) it (accepted: no group or world read)", name, perm)
	}
	b, err := io.ReadAll(io.LimitReader(f, 64<<10+1))
	if err != nil {
		return "", fmt.Errorf("read %s: %w", name, err)
	}
	if len(b) > 64<<10 {
		return "", fmt.Errorf("%s is over 64KiB: it should hold the token alone", name)
	}
	v := strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")
	if v == "" {
		return "", fmt.Errorf("%s is empty", name)
	}
	return v, nil
}
