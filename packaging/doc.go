// Package packaging holds how the hub is shipped: the container image's
// Dockerfile and configuration (built from `make dist` by `make image`) and
// the hardened systemd unit. Its test builds the image with the local Docker
// daemon and checks that `hub serve` in it answers /healthz.
package packaging
