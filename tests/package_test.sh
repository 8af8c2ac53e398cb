#!/usr/bin/env bash
# `cmake --install` of the build tree into a scratch prefix, then a project
# of its own (tests/package) found through find_package(Stoker), built from
# a clean directory and run. Usage: package_test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1
src=$2
scratch=$(mktemp -d /tmp/stoker-package.XXXXXX)
trap 'rm -rf "$scratch"' EXIT
cmake --install "$build" --prefix "$scratch/prefix" >/dev/null
for f in bin/stoker-node include/stoker/blur.hpp lib/cmake/Stoker/StokerConfig.cmake \
         share/stoker/config/local.ini; do
  [ -e "$scratch/prefix/$f" ] || { echo "package: $f was not installed"; exit 1; }
done
cmake -S "$src/tests/package" -B "$scratch/consumer" \
  -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$scratch/prefix" >/dev/null
cmake --build "$scratch/consumer" -j 2 >/dev/null
"$scratch/consumer/consumer"
