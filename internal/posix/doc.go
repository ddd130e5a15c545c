// Package posix is the set of descriptor-relative file calls the confined
// workspace is built on (openat, fstatat, mkdirat, unlinkat, linkat,
// renameat and the constants they take), and the owner of a file. Where
// the operating system has them (Linux, macOS, the BSDs) they are
// golang.org/x/sys/unix's own; on Windows every call fails with
// ErrUnsupported, and Supported says why, so the workspace refuses to open
// there instead of confining verbs less.
package posix
