#!/usr/bin/env bash
# tools/ops/plot-run on a real report: a local sim run of a few seconds writes
# its report, plot-run draws it; the PNG must be 1200x800 and not blank
# (more than 20 KB). Then bad input: not JSON, no series, a missing file,
# each a clear message and exit 2.
#
#   tests/observe/plot_run.sh STOKER_NODE_BINARY
set -u
node=${1:?usage: plot_run.sh STOKER_NODE_BINARY}
root=$(cd "$(dirname "$0")/../.." && pwd)
/usr/bin/python3 -c "import matplotlib" 2>/dev/null \
  || { echo "FAILED: no python3-matplotlib (tools/setup installs it)"; exit 1; }
dir=$(mktemp -d /tmp/stoker-plot.XXXXXX)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAILED: $*"; exit 1; }

"$node" --trainer.device=sim --trainer.sim-step-ms=20 --pipeline.height=32 \
  --pipeline.width=32 --pipeline.dataset-size=4800 --pipeline.batch-size=32 \
  --report="$dir/run.json" >"$dir/run.log" 2>&1 || { cat "$dir/run.log"; fail "the run failed"; }
"$root/tools/ops/plot-run" "$dir/run.json" "$dir/run.png" || fail "plot-run failed"
/usr/bin/python3 - "$dir/run.png" <<'PY' || fail "the PNG is not 1200x800 or looks blank"
import struct, sys
data = open(sys.argv[1], "rb").read()
assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
assert struct.unpack(">II", data[16:24]) == (1200, 800), struct.unpack(">II", data[16:24])
assert len(data) > 20000, len(data)
PY

expect_refusal() { # FILE TEXT
  out=$("$root/tools/ops/plot-run" "$1" "$dir/bad.png" 2>&1); code=$?
  [ "$code" = 2 ] || fail "plot-run $1 exited $code, expected 2: $out"
  case $out in *"$2"*) ;; *) fail "plot-run $1 said '$out', expected '$2'";; esac
}
echo "not json" >"$dir/junk.json"
expect_refusal "$dir/junk.json" "is not JSON"
echo '{"status": "ok"}' >"$dir/old.json"
expect_refusal "$dir/old.json" "has no \"series\""
expect_refusal "$dir/missing.json" "cannot read"
echo "1 passed, 0 failed"
