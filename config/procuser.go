package config

import (
	"fmt"
	"regexp"
)

// procUserSpec is what verbs.proc.user accepts: a user name, a uid, or
// uid:gid.
var procUserSpec = regexp.MustCompile(`^(?:[A-Za-z_][A-Za-z0-9_.-]{0,31}|[0-9]{1,10}(?::[0-9]{1,10})?)$`)

// ValidProcUser checks the form of verbs.proc.user (empty: not set). That
// the user exists is checked where the hub runs, when it starts.
func ValidProcUser(spec string) error {
	if spec != "" && !procUserSpec.MatchString(spec) {
		return fmt.Errorf("%q is not a user (accepted: a user name such as nobody, a uid such as 65534, uid:gid such as 1000:1000, or root)", spec)
	}
	return nil
}
