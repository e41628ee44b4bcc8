#!/usr/bin/env bash
# Build the docker sandbox image (default nagent-sandbox:debian) with no
# registry: download Debian's Python 3.11 packages with apt-get download,
# unpack them with dpkg -x into a root filesystem, and docker import it.
#
#   DOCKER_HOST=unix:///tmp/nagent-dockerd/docker.sock testdata/build-image.sh [IMAGE]
#
# Idempotent: when IMAGE already exists with this script's version label,
# nothing is done (FORCE=1 rebuilds). Needs apt lists (apt-get update) and a
# Debian 12 (bookworm) host, whose packages the image is made of.
#
# What the image holds, and what the docker backend relies on:
#   /usr/bin/python3           Python 3.11 with its standard library
#   /bin/busybox + applets     sh, sleep, ls, cat, kill, … for subprocess use
#   /workspace /scratch /run/nagent /opt/nagent   mount points
#   /etc/passwd, /etc/group    with the sandbox user nagent (65534)
set -euo pipefail

image=${1:-nagent-sandbox:debian}
version=2 # bump when the contents below change
docker=/usr/bin/docker
[ -x "$docker" ] || docker=docker

if [ "${FORCE:-}" != 1 ] &&
  [ "$("$docker" image inspect -f '{{index .Config.Labels "org.nagent.sandbox.version"}}' "$image" 2>/dev/null)" = "$version" ]; then
  echo "$image is up to date"
  exit 0
fi

packages=(
  python3.11-minimal libpython3.11-minimal libpython3.11-stdlib media-types
  libc6 libgcc-s1 gcc-12-base libcrypt1 zlib1g libexpat1 libssl3 libffi8
  libbz2-1.0 liblzma5 libsqlite3-0 libncursesw6 libtinfo6 libreadline8
  readline-common libuuid1 libdb5.3 libgdbm6 libgdbm-compat4 libnsl2
  libtirpc3 libtirpc-common libgssapi-krb5-2 libkrb5-3 libk5crypto3
  libkrb5support0 libkeyutils1 libcom-err2
  busybox-static
)

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cache=${NAGENT_IMAGE_CACHE:-/tmp/nagent-sandbox-debs}
mkdir -p "$cache"
download() { (cd "$cache" && apt-get download -qq -o APT::Sandbox::User=root "${packages[@]}"); }
download || { apt-get update -qq && download; }

root="$work/rootfs"
mkdir -p "$root"
for p in "${packages[@]}"; do
  deb=$(ls -t "$cache/${p}_"*.deb | head -n 1)
  dpkg -x "$deb" "$root"
done

# Debian 12 is merged-/usr: /bin, /lib, … are links into /usr.
for d in bin sbin lib lib64; do
  if [ -d "$root/$d" ] && [ ! -L "$root/$d" ]; then
    mkdir -p "$root/usr/$d"
    cp -a "$root/$d/." "$root/usr/$d/"
    rm -rf "${root:?}/$d"
  fi
  [ -e "$root/usr/$d" ] && ln -s "usr/$d" "$root/$d"
done
ln -sf python3.11 "$root/usr/bin/python3"
ln -sf python3 "$root/usr/bin/python"
for applet in $("$root/usr/bin/busybox" --list); do
  [ -e "$root/usr/bin/$applet" ] || ln -s busybox "$root/usr/bin/$applet"
done
rm -rf "$root/usr/share/doc" "$root/usr/share/man" "$root/usr/share/info" "$root/usr/share/lintian"

mkdir -p "$root/etc" "$root/tmp" "$root/workspace" "$root/scratch" "$root/run/nagent" "$root/opt/nagent" "$root/proc" "$root/sys" "$root/dev"
chmod 1777 "$root/tmp"
cat >"$root/etc/passwd" <<'PASSWD'
root:x:0:0:root:/root:/bin/sh
nagent:x:65534:65534:nagent sandbox:/tmp:/bin/sh
PASSWD
cat >"$root/etc/group" <<'GROUP'
root:x:0:
nagent:x:65534:
GROUP
: >"$root/etc/hosts"
: >"$root/etc/resolv.conf"

# Check the image can do what execute_code needs before importing it.
chroot "$root" /usr/bin/python3 -c 'import json, socket, os, subprocess, hashlib, sqlite3' ||
  { echo "the unpacked Python cannot import its standard library" >&2; exit 1; }

tar -C "$root" -c . | "$docker" import \
  -c 'ENV PATH=/usr/local/bin:/usr/bin:/bin' \
  -c 'ENV LANG=C.UTF-8' \
  -c 'USER 65534:65534' \
  -c 'WORKDIR /tmp' \
  -c "LABEL org.nagent.sandbox.version=$version" \
  - "$image" >/dev/null
echo "built $image ($(du -sh "$root" | cut -f1) unpacked)"
