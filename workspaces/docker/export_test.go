//go:build linux

package docker

// SetHostViews turns the host view of containers on or off for containers
// inspected afterwards, so tests can run the path that asks the daemon
// only.
func SetHostViews(on bool) { hostViews.Store(on) }
