//go:build linux

package proc_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/a6afc2ce/hermes-hub/verbs/proc"
)

func TestChooseProcUser(t *testing.T) {
	lookup := proc.LookupUser
	noNobody := func(spec string) (*proc.User, error) {
		if spec == "nobody" {
			return nil, errors.New("no such user")
		}
		return lookup(spec)
	}
	for _, tc := range []struct {
		name       string
		configured string
		euid       int
		lookup     func(string) (*proc.User, error)
		uid, gid   uint32 // of the user chosen; 0 for none (the hub's own)
		why, err   string
	}{
		{"not root, nothing configured", "", 1000, lookup, 0, 0, "as the hub's own user (uid 1000): the hub does not run as root", ""},
		{"not root, another user", "nobody", 1000, lookup, 0, 0, "", "the hub runs as uid 1000, which cannot start programs as nobody (uid 65534, gid 65534): only a hub running as root changes user"},
		{"not root, itself", "nobody", 65534, lookup, 0, 0, "as nobody (uid 65534, gid 65534), the hub's own user (verbs.proc.user)", ""},
		{"not root, root", "root", 1000, lookup, 0, 0, "", "only a hub running as root changes user"},
		{"root, nothing configured", "", 0, lookup, 65534, 65534, "as nobody (uid 65534, gid 65534): the hub runs as root, and verbs.proc.user does not name another user", ""},
		{"root, no nobody", "", 0, noNobody, 65534, 65534, "as uid 65534, gid 65534: the hub runs as root", ""},
		{"root, root by name", "root", 0, lookup, 0, 0, "as root (verbs.proc.user names it)", ""},
		{"root, root by id", "0", 0, lookup, 0, 0, "as root (verbs.proc.user names it)", ""},
		{"root, a user", "nobody", 0, lookup, 65534, 65534, "as nobody (uid 65534, gid 65534) (verbs.proc.user)", ""},
		{"root, a uid", "65534", 0, lookup, 65534, 65534, "as nobody (uid 65534, gid 65534) (verbs.proc.user)", ""},
		{"root, uid:gid without an entry", "4242:4343", 0, lookup, 4242, 4343, "as uid 4242, gid 4343 (verbs.proc.user)", ""},
		{"root, uid without an entry", "4242", 0, lookup, 0, 0, "", "uid 4242 has no entry in the user database: give its group too, such as 4242:4242"},
		{"root, unknown name", "no-such-user-here", 0, lookup, 0, 0, "", `there is no user "no-such-user-here" on this machine`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u, why, err := proc.ChooseUserFor(tc.configured, tc.euid, tc.lookup)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || !strings.Contains(why, tc.why) {
				t.Fatalf("why %q, err %v; want %q", why, err, tc.why)
			}
			switch {
			case tc.uid == 0 && u != nil:
				t.Fatalf("user %v, want the hub's own", u)
			case tc.uid != 0 && (u == nil || u.UID != tc.uid || u.GID != tc.gid):
				t.Fatalf("user %v, want uid %d gid %d", u, tc.uid, tc.gid)
			}
		})
	}
}
