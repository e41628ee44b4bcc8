#!/usr/bin/env bash
# Start a private Docker engine for the docker sandbox backend's tests.
#
# It runs dockerd 20.10 (Debian's docker.io) with its own socket, data root
# and exec root, so it never collides with a system engine, and with
# --iptables=false --bridge=none, so it leaves the host's firewall and
# ip_forward alone (sandbox containers run with --network none anyway).
#
#   testdata/start-dockerd.sh [DIR]   # default DIR: /tmp/nagent-dockerd
#
# Prints the DOCKER_HOST value (unix://DIR/docker.sock) on stdout once the
# engine answers, and exits non-zero with the tail of its log if it does not
# within 60 seconds. Idempotent: an engine already answering on the socket is
# reused. Stop it with: kill "$(cat DIR/dockerd.pid)".
set -euo pipefail

dir=${1:-${NAGENT_DOCKERD_DIR:-/tmp/nagent-dockerd}}
mkdir -p "$dir/data" "$dir/exec"
sock="$dir/docker.sock"
host="unix://$sock"

if ! command -v dockerd >/dev/null; then
  echo "dockerd not found: apt-get install -y docker.io" >&2
  exit 1
fi

# Use the client that matches the engine when both are installed.
docker=/usr/bin/docker
[ -x "$docker" ] || docker=docker

if [ -S "$sock" ] && "$docker" -H "$host" version >/dev/null 2>&1; then
  echo "$host"
  exit 0
fi

rm -f "$sock" "$dir/dockerd.pid"
nohup dockerd \
  --host "$host" \
  --data-root "$dir/data" \
  --exec-root "$dir/exec" \
  --pidfile "$dir/dockerd.pid" \
  --iptables=false --ip-forward=false --ip-masq=false --bridge=none \
  >"$dir/dockerd.log" 2>&1 </dev/null &

for _ in $(seq 1 120); do
  if [ -S "$sock" ] && "$docker" -H "$host" version >/dev/null 2>&1; then
    echo "$host"
    exit 0
  fi
  sleep 0.5
done
echo "dockerd did not answer on $sock within 60s; last lines of $dir/dockerd.log:" >&2
tail -n 30 "$dir/dockerd.log" >&2 || true
exit 1
