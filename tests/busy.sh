#!/usr/bin/env bash
# Run a command while a CPU hog keeps every core busy; the hog is stopped when the command ends,
# whatever its outcome (or on Ctrl-C), and the command's exit status is returned.
#   tests/busy.sh make test        (what `make test-busy` runs)
#   HOG_WORKERS=4 tests/busy.sh CMD  (one busy loop per core by default: nproc)
set -u
[ $# -gt 0 ] || { echo "usage: $0 COMMAND [ARG...]" >&2; exit 2; }
workers=${HOG_WORKERS:-$(nproc)}
hogs=()
stop() {
  [ ${#hogs[@]} -gt 0 ] && kill "${hogs[@]}" 2>/dev/null
  wait "${hogs[@]}" 2>/dev/null
  hogs=()
}
trap stop EXIT
trap 'exit 130' INT TERM
for _ in $(seq "$workers"); do
  bash -c 'while :; do :; done' &
  hogs+=($!)
done
echo "busy.sh: $workers busy loops (pids ${hogs[*]}) while: $*" >&2
start=$(date +%s)
"$@"
status=$?
echo "busy.sh: '$*' exited $status after $(( $(date +%s) - start )) s under $workers busy loops" >&2
exit $status
