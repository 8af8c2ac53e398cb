# Shared by the bash tools (source it after setting `tool`, the name said
# in front of each line):
#
#     tool=bench-router
#     . "$(dirname "$0")/../lib/common.sh"   # from tools/bench, data, ...
#
# Gives `root` (the repository), `build` (the one way every tool finds the
# build: BUILD_DIR, default build/, as tools/setup), `node` (STOKER_NODE,
# default the build's stoker-node: a user's own node binary may stand in),
# and say / fail / value.

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=${BUILD_DIR:-$root/build}
node=${STOKER_NODE:-$build/apps/node/stoker-node}

# A line about the tool's own progress, on standard error.
say() { printf '[%s] %s\n' "${tool:-tool}" "$*" >&2; }

# Says why and exits 1 (2 when the first argument is --usage).
fail() {
  local code=1
  if [ "${1:-}" = --usage ]; then code=2; shift; fi
  say "$*"
  exit "$code"
}

# The first number a JSON run report gives for KEY: value FILE KEY.
value() { grep -o "\"$2\": [-0-9.e+]*" "$1" | head -n 1 | awk '{print $2}'; }
