#!/usr/bin/env bash
# One line per dependency instead of the package manager's output:
#   mk/dep.sh NAME WHERE CHECK INSTALL
# prints "NAME  WHERE  cached" when the shell command CHECK succeeds, else
# runs INSTALL with its whole output in $TIERKEEPER_CACHE/logs/NAME.log and
# prints "done (N s)", or "FAILED" followed by the log's last lines.
set -uo pipefail
name=$1 where=$2 check=$3 install=$4
cache=${TIERKEEPER_CACHE:-.cache}
line() { printf '%-24s %-48s %s\n' "$name" "$where" "$1"; }
if [ -n "$check" ] && bash -c "$check" >/dev/null 2>&1; then
  line cached
  exit 0
fi
mkdir -p "$cache/logs"
log=$cache/logs/$name.log
start=$SECONDS
bash -c "$install" >"$log" 2>&1
rc=$?
if [ "$rc" = 0 ]; then
  line "done ($((SECONDS - start)) s; log ${log#"$PWD"/})"
  exit 0
fi
line "FAILED (exit $rc after $((SECONDS - start)) s)"
echo "---- last 40 lines of $log:"
tail -n 40 "$log"
echo "---- (full output: $log)"
exit "$rc"
