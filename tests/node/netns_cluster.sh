#!/usr/bin/env bash
# Multi-host for real: head, trainer and two workers each in its own network
# namespace with its own address (veth pairs on a bridge, all made here and
# removed on exit), links limited with tc netem (1 Gbit/s, 0.5 ms). Checks
# that a head bound beyond loopback without TLS refuses to start (exit 2),
# then runs the cluster with mutual TLS (certificates from tools/ops/make-certs)
# while a stranger sends the head a BASP header declaring a 4 GiB payload,
# and checks the run completes with every sample delivered once, over both
# workers.
# Needs root and `ip netns`; otherwise exits 77, which ctest reports as
# skipped, saying why.
#
#   tests/netns_cluster.sh STOKER_NODE_BINARY
set -u
node=${1:?usage: netns_cluster.sh STOKER_NODE_BINARY}
skip() { echo "SKIPPED: $*"; exit 77; }
[ "$(id -u)" = 0 ] || skip "needs root to create network namespaces"
command -v ip >/dev/null || skip "no 'ip' command (iproute2)"

tag=sk$(( $$ % 100000 ))        # short: interface names have 15 characters
net=10.77.$(( $$ % 200 + 20 ))  # our own namespaces' subnet
dir=$(mktemp -d /tmp/stoker-netns.XXXXXX)
names=(head tr wa wb)
cleanup() {
  for n in "${names[@]}"; do
    ip netns pids "$tag$n" 2>/dev/null | xargs -r kill 2>/dev/null
    ip netns del "$tag$n" 2>/dev/null
  done
  ip link del "${tag}br" 2>/dev/null
}
trap cleanup EXIT
ip netns add "${tag}probe" 2>/dev/null || skip "cannot create a network namespace here"
ip netns del "${tag}probe"
ip link add "${tag}br" type bridge || skip "cannot create a bridge here"
ip link set "${tag}br" up

i=1
for n in "${names[@]}"; do
  i=$((i + 1))
  ns=$tag$n
  ip netns add "$ns"
  ip link add "${tag}${n}h" type veth peer name "${tag}${n}n"
  ip link set "${tag}${n}n" netns "$ns"
  ip link set "${tag}${n}h" master "${tag}br" up
  ip netns exec "$ns" ip addr add "$net.$i/24" dev "${tag}${n}n"
  ip netns exec "$ns" ip link set "${tag}${n}n" up
  ip netns exec "$ns" ip link set lo up
  ip netns exec "$ns" tc qdisc add dev "${tag}${n}n" root netem rate 1gbit delay 0.5ms 2>/dev/null \
    || echo "note: tc netem not available; links are not limited"
done
head_ip=$net.2
trainer_ip=$net.3
certs=$dir/certs
bash "$(dirname "$0")/../../tools/ops/make-certs" "$certs" head t-0 w-a w-b >/dev/null \
  || { echo "FAILED: tools/ops/make-certs"; exit 1; }
fail() { echo "FAILED: $*"; for f in "$dir"/*.log; do echo "== $f"; cat "$f"; done; exit 1; }

# Beyond loopback without TLS: a config error, before anything listens.
ip netns exec "${tag}head" timeout 30 "$node" --role=head --node.name=head \
  --cluster.bind="$head_ip" --cluster.port=4242 >"$dir/plain-head.log" 2>&1
code=$?
[ "$code" = 2 ] || fail "a head bound to $head_ip without TLS exited $code, expected 2"
grep -q "tls.certificate" "$dir/plain-head.log" || fail "the refusal does not name tls.*"

common=(--tls.dir="$certs" --trainer.device=sim --trainer.sim-step-ms=5 --pipeline.height=32 --pipeline.width=32
        --pipeline.dataset-size=320 --pipeline.batch-size=16 --cluster.connect-timeout=20s)

ip netns exec "${tag}head" "$node" --role=head --node.name=head \
  --cluster.bind="$head_ip" --cluster.port=4242 \
  '--cluster.nodes=["t-0:trainer", "w-a:worker:1", "w-b:worker:1"]' \
  --report="$dir/report.json" "${common[@]}" >"$dir/head.log" 2>&1 &
head_pid=$!
# A stranger on the network: a BASP header declaring 0xFFFFFFFF payload
# bytes. Only TLS peers with the cluster's certificate get past the gate.
for _ in $(seq 100); do grep -q "listening on" "$dir/head.log" && break; sleep 0.1; done
ip netns exec "${tag}wa" bash -c \
  "{ printf '\\x01\\x00\\x00\\x00\\xff\\xff\\xff\\xff'; head -c 120 /dev/zero; } >/dev/tcp/$head_ip/4242" \
  2>/dev/null || true

ip netns exec "${tag}tr" "$node" --role=trainer --node.name=t-0 \
  --cluster.bind="$trainer_ip" --cluster.head="$head_ip:4242" "${common[@]}" \
  >"$dir/t-0.log" 2>&1 &
pids=($!)
for w in a b; do
  ip netns exec "${tag}w$w" "$node" --role=worker --node.name="w-$w" \
    --worker.count=1 --cluster.head="$head_ip:4242" "${common[@]}" \
    >"$dir/w-$w.log" 2>&1 &
  pids+=($!)
done

status=0
wait "$head_pid" || status=$?
for pid in "${pids[@]}"; do wait "$pid" || status=$?; done
cat "$dir/head.log"
[ "$status" = 0 ] || fail "a node exited $status"
grep -q '"samples_delivered": 320,' "$dir/report.json" || fail "not every sample delivered"
grep -q '"missing": 0,' "$dir/report.json" || fail "samples missing"
grep -q '"duplicates": 0,' "$dir/report.json" || fail "duplicates"
grep -Eq '"name": "w-a/0", "batches": [1-9]' "$dir/report.json" || fail "w-a got no work"
grep -Eq '"name": "w-b/0", "batches": [1-9]' "$dir/report.json" || fail "w-b got no work"
grep -q "refused $net.4" "$dir/head.log" || fail "the head did not name the stranger it refused"
echo "1 passed, 0 failed"
rm -rf "$dir"
