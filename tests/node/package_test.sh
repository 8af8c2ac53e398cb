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
# The Python package, from the prefix alone (a run of 2 small epochs).
if [ -d "$build/python/stoker" ]; then
  site=$scratch/prefix/lib/python3/dist-packages
  ls "$site"/stoker/_stoker*.so "$site/stoker/__init__.py" >/dev/null \
    || { echo "package: the Python package was not installed in $site"; exit 1; }
  (cd "$scratch" && PYTHONPATH=$site /usr/bin/python3 -c '
import stoker
loader = stoker.DataLoader(pipeline={"height": 32, "width": 32,
                                     "dataset_size": 128, "batch_size": 16,
                                     "epochs": 2})
ids = [i for e in range(loader.epochs) for _ in loader
       for i in loader.last_batch.sample_ids]
loader.close()
assert sorted(ids) == sorted(list(range(128)) * 2), ids
assert stoker.__file__.startswith("'"$site"'"), stoker.__file__
print("package: import stoker from the prefix: 2 epochs of 128 samples once each")
') || { echo "package: the installed Python package failed"; exit 1; }
fi
example=$src/examples/custom-transform
cmake -S "$example" -B "$scratch/example" \
  -DCMAKE_PREFIX_PATH="$scratch/prefix" >/dev/null
cmake --build "$scratch/example" -j 2 >/dev/null
"$example/make-shapes-csv" "$scratch/train.csv" 640 1
"$example/make-shapes-csv" "$scratch/test.csv" 200 2
STOKER_NODE=$scratch/example/my-node LOG_DIR=$scratch/logs \
  "$src/tools/ops/launch-cluster" "$example/csv-cluster.ini" \
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
