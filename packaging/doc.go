// Package packaging holds how the hub is shipped: the container image's
// Dockerfile and configuration, and context.sh, which prepares its build
// context from `make dist` (`make image`; `make image-busybox` adds a
// busybox userland for proc.run), and the hardened systemd unit. Its tests
// build both images with the local Docker daemon and check that `hub serve`
// in each answers /healthz, passes its own `hub doctor` and runs what
// proc.run can run there, and that building from the repository's root
// stops with what to run instead.
package packaging
