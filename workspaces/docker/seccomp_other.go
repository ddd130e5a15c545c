//go:build !linux

package docker

// profile is empty here: containers run under the daemon's default seccomp
// profile. The rule against set-user-ID files (seccomp_linux.go) is built
// from the default profile's Linux definition, which this build lacks.
func profile() (string, error) { return "", nil }
