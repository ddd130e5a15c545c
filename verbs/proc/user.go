package proc

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"strconv"
	"strings"

	"github.com/a6afc2ce/hermes-hub/internal/posix"
)

// DefaultUser is the user a hub running as root runs proc.run's
// programs as when the configuration names none; nobodyID is its uid and
// gid when the user database has no such user.
const (
	DefaultUser = "nobody"
	nobodyID    = 65534
)

// User is a user proc.run runs programs as, other than the hub's own:
// the program gets its uid, its primary gid and no supplementary group.
type User struct {
	// Name is the user's name in the user database, empty for an id
	// without an entry.
	Name string `json:"name,omitempty"`
	UID  uint32 `json:"uid"`
	GID  uint32 `json:"gid"`
	// Home is the user's home directory ("/" without an entry).
	Home string `json:"home,omitempty"`
}

// String names u for logs and messages: "nobody (uid 65534, gid 65534)".
func (u *User) String() string {
	ids := fmt.Sprintf("uid %d, gid %d", u.UID, u.GID)
	if u.Name == "" {
		return ids
	}
	return u.Name + " (" + ids + ")"
}

// Env is what the allow-listed variable k holds for a program run as u:
// HOME is u's home, USER and LOGNAME its name (unset without one), never
// the hub's. overridden is false for every other variable.
func (u *User) Env(k string) (v string, overridden bool) {
	switch k {
	case "HOME":
		return u.Home, true
	case "USER", "LOGNAME":
		return u.Name, true
	}
	return "", false
}

// MayWriteDir reports whether a program run as u may create files in the
// directory fi describes, by its owner, group and permission bits (u has
// no supplementary group). known is false where the platform does not
// tell owners.
func (u *User) MayWriteDir(fi fs.FileInfo) (may, known bool) {
	uid, gid, ok := posix.Owner(fi)
	if !ok {
		return false, false
	}
	perm := fi.Mode().Perm() // then shifted: its low bits are the class that applies
	switch {
	case uint32(uid) == u.UID:
		perm >>= 6
	case uint32(gid) == u.GID:
		perm >>= 3
	}
	return perm&0o3 == 0o3, true // write and search
}

// ChooseUser decides whom proc.run runs programs as, from the
// configured user (verbs.proc.user; empty when not set), and says why in
// a phrase for the start log and hub doctor ("as nobody (uid 65534, gid
// 65534): …"). A nil user means the hub's own.
//
// A hub running as root runs them as the configured user, or as nobody
// (uid and gid 65534 when there is no such user) when none is configured:
// a program running as root could read the hub's tokens in
// /proc/<pid>/environ, and everything else. Root is kept only when the
// configuration names it ("root" or "0"). A hub running as another user
// runs them as itself, and a configured user other than itself is an
// error: only root can change user.
func ChooseUser(configured string) (*User, string, error) {
	return chooseUser(configured, os.Geteuid(), lookupUser)
}

func chooseUser(configured string, euid int, lookup func(string) (*User, error)) (*User, string, error) {
	if euid != 0 {
		if configured == "" && euid < 0 { // no uids (Windows)
			return nil, "as the hub's own user", nil
		}
		if configured == "" {
			return nil, fmt.Sprintf("as the hub's own user (uid %d): the hub does not run as root", euid), nil
		}
		u, err := lookup(configured)
		if err != nil {
			return nil, "", err
		}
		if euid < 0 || u.UID != uint32(euid) {
			return nil, "", fmt.Errorf("the hub runs as uid %d, which cannot start programs as %s: only a hub running as root changes user (remove verbs.proc.user, or run the hub as root)", euid, u)
		}
		return nil, fmt.Sprintf("as %s, the hub's own user (verbs.proc.user)", u), nil
	}
	if configured == "" {
		u, err := lookup(DefaultUser)
		if err != nil || u.UID == 0 {
			u = &User{UID: nobodyID, GID: nobodyID, Home: "/"}
		}
		return u, fmt.Sprintf("as %s: the hub runs as root, and verbs.proc.user does not name another user", u), nil
	}
	u, err := lookup(configured)
	if err != nil {
		return nil, "", err
	}
	if u.UID == 0 {
		return nil, "as root (verbs.proc.user names it): they can read the hub's tokens, its memory and every file of this machine", nil
	}
	return u, fmt.Sprintf("as %s (verbs.proc.user)", u), nil
}

// lookupUser resolves spec (a user name, a uid or uid:gid, as
// config.ValidProcUser accepts) in the user database. root is root even
// without an entry.
func lookupUser(spec string) (*User, error) {
	if spec == "root" || spec == "0" {
		return &User{Name: "root", Home: "/root"}, nil
	}
	uidText, gidText, withGID := strings.Cut(spec, ":")
	var (
		found *user.User
		err   error
	)
	if _, nerr := strconv.ParseUint(uidText, 10, 32); nerr == nil {
		found, err = user.LookupId(uidText)
	} else {
		found, err = user.Lookup(spec)
	}
	var unknownName user.UnknownUserError
	var unknownID user.UnknownUserIdError
	switch {
	case errors.As(err, &unknownName):
		return nil, fmt.Errorf("there is no user %q on this machine (accepted: a user name, a uid, uid:gid, or root)", spec)
	case errors.As(err, &unknownID) && withGID:
		return procUserOf("", uidText, gidText, "/")
	case errors.As(err, &unknownID):
		return nil, fmt.Errorf("uid %s has no entry in the user database: give its group too, such as %s:%s", uidText, uidText, uidText)
	case err != nil:
		return nil, fmt.Errorf("look up user %q: %w", spec, err)
	}
	if !withGID {
		gidText = found.Gid
	}
	home := found.HomeDir
	if home == "" {
		home = "/"
	}
	return procUserOf(found.Username, found.Uid, gidText, home)
}

func procUserOf(name, uid, gid, home string) (*User, error) {
	u, err := parseID(uid)
	if err != nil {
		return nil, fmt.Errorf("uid %q: %w", uid, err)
	}
	g, err := parseID(gid)
	if err != nil {
		return nil, fmt.Errorf("gid %q: %w", gid, err)
	}
	return &User{Name: name, UID: u, GID: g, Home: home}, nil
}

// parseID reads a uid or gid; a negative one (nobody is -2 on macOS) is
// the 32-bit id it stands for.
func parseID(s string) (uint32, error) {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < -1<<31 || n > 1<<32-1 {
		return 0, errors.New("not a 32-bit id")
	}
	return uint32(n), nil
}
