#!/usr/bin/env bash
# The installed package as a user meets it: `cmake --install` of the build
# tree into a scratch prefix; examples/custom-transform built against it
# from a clean directory; then its my-node run on a loopback cluster (a
# head, a trainer and two worker nodes) over CSV data made by the example's
# script. Checks every sample arrived once and the model learned.
# Usage: package_test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1
src=$2
scratch=$(mktemp -d /tmp/stoker-package.XXXXXX)
trap 'rm -rf "$scratch"' EXIT
cmake --install "$build" --prefix "$scratch/prefix" >/dev/null
for f in bin/stoker-node include/stoker/registry.hpp include/stoker/node_main.hpp \
         lib/cmake/Stoker/StokerConfig.cmake share/stoker/config/local.ini; do
  [ -e "$scratch/prefix/$f" ] || { echo "package: $f was not installed"; exit 1; }
done
example=$src/examples/custom-transform
cmake -S "$example" -B "$scratch/example" \
  -DCMAKE_PREFIX_PATH="$scratch/prefix" >/dev/null
cmake --build "$scratch/example" -j 2 >/dev/null
"$example/make-shapes-csv" "$scratch/train.csv" 640 1
"$example/make-shapes-csv" "$scratch/test.csv" 200 2
STOKER_NODE=$scratch/example/my-node LOG_DIR=$scratch/logs \
  "$src/tools/launch-cluster" "$example/csv-cluster.ini" \
  --pipeline.data="$scratch/train.csv" --pipeline.eval-data="$scratch/test.csv" \
  --trainer.device=cpu --report="$scratch/report.json" || {
  echo "package: the example's cluster failed; its logs:"
  tail -n 20 "$scratch"/logs/*.log
  exit 1
}
report=$(cat "$scratch/report.json")
grep -q '"samples_delivered": 1920,' <<<"$report" \
  || { echo "package: expected 3 x 640 samples delivered: $report"; exit 1; }
grep -q '"missing": 0,' <<<"$report" || { echo "package: $report"; exit 1; }
accuracy=$(sed -n 's/.*"test_accuracy": \([0-9.]*\).*/\1/p' <<<"$report")
echo "package: the example's tiny-mlp reaches test accuracy $accuracy (chance 0.25)"
awk -v a="$accuracy" 'BEGIN { exit !(a > 0.6) }' \
  || { echo "package: expected the model to learn (accuracy above 0.6)"; exit 1; }
