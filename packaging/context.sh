#!/bin/sh
# Prepares the build context of packaging/Dockerfile in DIR, as `make image`
# and `make image-busybox` use it (and packaging's test):
#
#   packaging/context.sh DIR HUB CA_CERTS [BUSYBOX]
#
# HUB is the static linux binary, CA_CERTS the CA bundle the image carries
# (the build machine's), BUSYBOX a static busybox (Debian's busybox-static)
# whose applets become the image's userland for proc.run; without it the
# image holds no program but the hub.
#
#   DIR/system/       copied to / owned by root: /hub, the CA bundle,
#                     /etc/hermes-hub/hub.yml, /tmp; with BUSYBOX also
#                     /bin/busybox, a link per applet, /etc/passwd and
#                     /etc/group (the hub's user 65532, its home /tmp)
#   DIR/hub-owned/    copied to / owned by the hub's user (65532): /state
#                     (mode 700, as hub doctor wants it) and /workspace
#   DIR/use make image .../  an empty directory the Dockerfile copies first,
#                     so that a build from anywhere else stops saying so
set -eu
if [ $# -lt 3 ] || [ $# -gt 4 ]; then
  echo "usage: $0 DIR HUB CA_CERTS [BUSYBOX]" >&2
  exit 2
fi
dir=$1 hub=$2 certs=$3 busybox=${4:-}
here=$(dirname "$0")

rm -rf "$dir"
mkdir -p "$dir/system/etc/ssl/certs" "$dir/system/etc/hermes-hub" "$dir/system/tmp" "$dir/hub-owned/state" "$dir/hub-owned/workspace" \
  "$dir/use make image, which prepares the context of this Dockerfile in dist"
chmod 1777 "$dir/system/tmp"
cp "$hub" "$dir/system/hub"
chmod 755 "$dir/system/hub"
cp "$certs" "$dir/system/etc/ssl/certs/ca-certificates.crt"
cp "$here/hub.yml" "$dir/system/etc/hermes-hub/hub.yml"
cp "$here/Dockerfile" "$dir/Dockerfile"
chmod 644 "$dir/system/etc/ssl/certs/ca-certificates.crt" "$dir/system/etc/hermes-hub/hub.yml"
chmod 700 "$dir/hub-owned/state"
chmod 755 "$dir/hub-owned/workspace"

if [ -n "$busybox" ]; then
  if ! "$busybox" true 2>/dev/null || ldd "$busybox" >/dev/null 2>&1; then
    echo "$busybox is not a static busybox (install busybox-static)" >&2
    exit 1
  fi
  sys=$dir/system
  mkdir -p "$sys/bin"
  cp "$busybox" "$sys/bin/busybox"
  for a in $("$busybox" --list-full); do
    case $a in bin/busybox | linuxrc) continue ;; esac
    mkdir -p "$sys/$(dirname "$a")"
    ln -sf /bin/busybox "$sys/$a"
  done
  printf 'root:x:0:0:root:/root:/bin/sh\nhub:x:65532:65532:Hermes Hub:/tmp:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n' >"$sys/etc/passwd"
  printf 'root:x:0:\nhub:x:65532:\nnogroup:x:65534:\n' >"$sys/etc/group"
  chmod 644 "$sys/etc/passwd" "$sys/etc/group"
fi
