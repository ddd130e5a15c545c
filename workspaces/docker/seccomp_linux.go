//go:build linux

package docker

import (
	"encoding/json"
	"slices"

	"github.com/moby/profiles/seccomp"
	"github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

// A program in a container writes files the host's users see: a file it
// made set-user-ID (or set-group-ID) and owned by the container's user is
// that user's program for anyone on the host who runs it, and the
// workspace on the host is no nosuid mount. So the containers run under
// Docker's default seccomp profile with one change: no call may give a
// file either bit. chmod, fchmod, fchmodat and fchmodat2 are allowed when
// the mode has neither; creat, mknod and mknodat too; open and openat when
// they create nothing (neither O_CREAT nor O_TMPFILE) or the mode has
// neither; openat2, whose mode seccomp cannot read, answers ENOSYS (callers
// fall back to openat). io_uring, whose openat seccomp does not see, is
// already outside the default profile. Anything else refused answers EPERM,
// as the profile's default.

// setIDBits are S_ISUID and S_ISGID.
const setIDBits = unix.S_ISUID | unix.S_ISGID

// creating are the open flags that make a file: O_CREAT and O_TMPFILE's own
// bit.
const creating = unix.O_CREAT | (unix.O_TMPFILE &^ unix.O_DIRECTORY)

// modeArgs gives, for each call that sets a file's mode, the index of its
// mode argument.
var modeArgs = map[string]uint{
	"chmod": 1, "fchmod": 1, "fchmodat": 2, "fchmodat2": 2,
	"creat": 1, "mknod": 1, "mknodat": 2,
}

// openArgs gives, for open and openat, the index of the flags and mode
// arguments.
var openArgs = map[string][2]uint{"open": {1, 2}, "openat": {2, 3}}

// profile builds the containers' seccomp profile (JSON, as Docker's
// --security-opt seccomp= takes it).
func profile() (string, error) {
	p := seccomp.DefaultProfile()
	ruled := []string{"openat2"}
	for n := range modeArgs {
		ruled = append(ruled, n)
	}
	for n := range openArgs {
		ruled = append(ruled, n)
	}
	for _, sc := range p.Syscalls {
		sc.Names = slices.DeleteFunc(sc.Names, func(n string) bool { return slices.Contains(ruled, n) })
	}
	//lint:ignore SA1019 an entry may still name its call in the older single Name field; such an entry is kept, not dropped as empty
	p.Syscalls = slices.DeleteFunc(p.Syscalls, func(sc *seccomp.Syscall) bool { return len(sc.Names) == 0 && sc.Name == "" })
	allowWhenClear := func(name string, arg uint, bits uint64) *seccomp.Syscall {
		return &seccomp.Syscall{LinuxSyscall: specs.LinuxSyscall{Names: []string{name}, Action: specs.ActAllow,
			Args: []specs.LinuxSeccompArg{{Index: arg, Value: bits, ValueTwo: 0, Op: specs.OpMaskedEqual}}}}
	}
	for _, n := range sortedKeys(modeArgs) {
		p.Syscalls = append(p.Syscalls, allowWhenClear(n, modeArgs[n], setIDBits))
	}
	for _, n := range sortedKeys(openArgs) {
		a := openArgs[n]
		p.Syscalls = append(p.Syscalls, allowWhenClear(n, a[0], creating), allowWhenClear(n, a[1], setIDBits))
	}
	enosys := uint(unix.ENOSYS)
	p.Syscalls = append(p.Syscalls, &seccomp.Syscall{LinuxSyscall: specs.LinuxSyscall{Names: []string{"openat2"}, Action: specs.ActErrno, ErrnoRet: &enosys}})
	b, err := json.Marshal(p)
	return string(b), err
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
