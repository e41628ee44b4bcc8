#!/usr/bin/env bash
# Measures `nagent tui` start-up: milliseconds from creating a detached 80x24
# tmux pane until the first frame's header is on screen, against a baseline
# pane that only echoes (tmux start-up and polling). Needs tmux.
#   adapters/tui/testdata/startup.sh [path/to/nagent] [runs]
set -euo pipefail
bin=${1:-$(mktemp -d)/nagent}
runs=${2:-5}
if [ ! -x "$bin" ]; then (cd "$(dirname "$0")/../../.." && go build -o "$bin" .); fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
printf 'set -g status off\n' >"$work/conf"
export NAGENT_HOME="$work/home" NAGENT_LLM_BASE_URL=http://127.0.0.1:9/v1 NAGENT_LLM_MODEL=startup-model
measure() { # mark command
  local sock="$work/s$RANDOM" t0 t1
  t0=$(date +%s%N)
  tmux -S "$sock" -f "$work/conf" new-session -d -s m -x 80 -y 24 "$2"
  until tmux -S "$sock" capture-pane -p -t m 2>/dev/null | grep -q "$1"; do sleep 0.01; done
  t1=$(date +%s%N)
  tmux -S "$sock" kill-server
  echo $(((t1 - t0) / 1000000))
}
"$bin" tui </dev/null >/dev/null 2>&1 || true # first run creates $NAGENT_HOME
for i in $(seq "$runs"); do
  echo "baseline (echo) $(measure READY 'echo READY; sleep 5') ms   nagent tui $(measure 'N-Agent · session' "$bin tui") ms"
done
