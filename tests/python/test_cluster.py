"""stoker.Trainer: Python processes as the trainer nodes of a cluster."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from conftest import NODE, SOURCE_DIR, Cluster

FASHION = "/usr/share/datasets/fashion-mnist"


def fashion_head_args(samples, epochs, eval_samples):
    return ["--config-file=" + os.path.join(SOURCE_DIR, "config",
                                            "fashion-mnist.ini"),
            "--cluster.nodes=[\"t-0:trainer\", \"t-1:trainer\", "
            "\"w-a:worker:1\", \"w-b:worker:1\"]",
            f"--pipeline.dataset-size={samples}",
            f"--pipeline.eval-size={eval_samples}",
            f"--pipeline.epochs={epochs}", "--pipeline.batch-size=32",
            "--trainer.log-every=100000"]


def test_two_python_trainers_under_ddp_train_the_cnn(cluster_dir):
    # tools/setup installs it: its absence is a failure, not a skip.
    assert os.path.isdir(FASHION), \
        f"{FASHION} is missing (apt-get install dataset-fashion-mnist)"
    c = Cluster(cluster_dir, fashion_head_args(19200, 2, 2000))
    try:
        for name in ("t-0", "t-1"):
            c.python_trainer(name)
        for name in ("w-a", "w-b"):
            c.worker(name)
        assert c.wait("head", 400) == 0, c.log("head") + c.log("t-0")
        for name in ("t-0", "t-1"):
            assert c.wait(name, 60) == 0, c.log(name)
        for name in ("w-a", "w-b"):
            assert c.wait(name, 30) == 0, c.log(name)
    finally:
        c.stop()
    report = json.load(open(c.report))
    assert report["missing"] == 0 and report["duplicates"] == 0, report
    assert report["world"] == 2
    ranks = report["trainers"]
    assert [t["device"] for t in ranks] == ["python", "python"]
    assert ranks[0]["steps"] == ranks[1]["steps"] == 19200 // 64 * 2
    assert {t["node"] for t in ranks} == {"t-0", "t-1"}
    rank0 = [n for n in ("t-0", "t-1") if "rank 0 of 2" in c.log(n)][0]
    results = {n: json.load(open(c.result(n))) for n in ("t-0", "t-1")}
    # Every step all-reduced: both ranks end with the same bits (a broken
    # all-reduce lets them drift apart at the first step).
    assert results["t-0"]["parameters_sha256"] \
        == results["t-1"]["parameters_sha256"], results
    # close() after a good run: the run's end, not a 20 s wait for the
    # actor system (a thread that had asked the group's store held it; and
    # a trainer's last down message, queued in a BASP broker the shutdown
    # had stopped, held the trainer: node/actor_release.hpp).
    for n in ("t-0", "t-1"):
        assert results[n]["close_seconds"] <= 2.0, (n, results[n],
                                                    c.log(n))
    accuracy = results[rank0]["test_accuracy"]
    print("test accuracy", accuracy)
    assert accuracy >= 0.85, c.log(rank0)


def sim_head_args(extra=()):
    return ["--cluster.nodes=[\"t-0:trainer\", \"t-1:trainer\", "
            "\"w-a:worker:2\"]",
            "--pipeline.height=32", "--pipeline.width=32",
            "--pipeline.dataset-size=100000", "--pipeline.batch-size=8",
            "--trainer.log-every=100000", "--trainer.collective-timeout=15s",
            *extra]


LOOP = """
import stoker, sys, time
import logging
logging.basicConfig(level=logging.INFO, format="%(message)s")
t = stoker.Trainer(head=sys.argv[1], name=sys.argv[2])
print("rank", t.rank, "of", t.world_size, flush=True)
for i, (x, y) in enumerate(t):
    if i == 20:
        print("step 20", flush=True)
        if sys.argv[3] == "raise":
            raise ZeroDivisionError("in the loop")
    time.sleep(0.01)
"""


def test_a_killed_python_trainer_ends_the_run_naming_it(cluster_dir):
    c = Cluster(cluster_dir, sim_head_args())
    try:
        for name in ("t-0", "t-1"):
            c.start(name, [sys.executable, "-c", LOOP, c.head, name, "run"])
        c.worker("w-a")
        deadline = time.monotonic() + 120
        while "step 20" not in c.log("t-1"):
            assert time.monotonic() < deadline, c.log("t-1") + c.log("head")
            time.sleep(0.1)
        c.procs["t-1"].send_signal(signal.SIGKILL)
        started = time.monotonic()
        assert c.wait("head", 60) == 1, c.log("head")
        # The head names the lost rank within seconds of the kill (the wait
        # above allows a minute: this is what the test claims).
        assert time.monotonic() - started < 5, c.log("head")
        assert "run failed: trainer rank 1 on node 't-1' exited before " \
            "the run ended (its connection dropped)" in c.log("head"), \
            c.log("head")
        assert c.wait("t-0", 60) is not None, c.log("t-0")
        assert c.wait("w-a", 60) is not None, c.log("w-a")
    finally:
        c.stop()


NO_CLOSE = """
import stoker, sys
t = stoker.Trainer(head=sys.argv[1], name=sys.argv[2])
for x, y in t:
    pass
# no t.close(): the script ends with its loop's last batch unacknowledged
"""


def test_a_python_trainer_that_ends_without_close_fails_the_run_in_time(
        cluster_dir):
    # Its process leaves as its script ends; the head, asking it for the
    # report, waited without a deadline (it hung past 120 s), or said only
    # "the actor asked is gone".
    c = Cluster(cluster_dir, [
        "--cluster.nodes=[\"t-0:trainer\", \"w-a:worker:1\"]",
        "--pipeline.height=32", "--pipeline.width=32",
        "--pipeline.batch-size=16", "--pipeline.dataset-size=800",
        "--pipeline.epochs=1"])
    try:
        c.start("t-0", [sys.executable, "-c", NO_CLOSE, c.head, "t-0"])
        c.worker("w-a")
        started = time.monotonic()
        assert c.wait("head", 60) == 1, c.log("head")
        assert time.monotonic() - started < 30, c.log("head")
        assert "run failed: trainer rank 0 on node 't-0'" in c.log("head")
        assert "the actor asked is gone" not in c.log("head")
        code = c.wait("t-0", 30)
        assert code is not None and code >= 0, (code, c.log("t-0"))
        assert c.wait("w-a", 30) is not None, c.log("w-a")
    finally:
        c.stop()


NO_HEAD = """
import socket, stoker, sys, time
import logging
logging.basicConfig(level=logging.INFO, format="%(message)s")
s = socket.socket()
s.bind(("127.0.0.1", 0))
port = s.getsockname()[1]
s.close()  # nobody listens there now
started = time.monotonic()
t = stoker.Trainer(head=f"127.0.0.1:{port}", name="t-0",
                   cluster={"connect_timeout": "2s"})
try:
    t.init_process_group(timeout=5)  # torch's spelling is a timedelta
except TypeError as e:
    print("type error:", e, flush=True)
try:
    t.init_process_group()
except stoker.RunFailed as e:
    print("raised after", time.monotonic() - started, "s:", e, flush=True)
    sys.exit(0)
sys.exit("no exception")
"""


def test_a_head_nobody_listens_on_raises_the_reason_within_the_timeout():
    done = subprocess.run([sys.executable, "-c", NO_HEAD], capture_output=True,
                          text=True, timeout=60, env=os.environ.copy())
    assert done.returncode == 0, done.stdout + done.stderr
    line = [x for x in done.stdout.splitlines() if x.startswith("raised")][0]
    # The node's own reason, not "ended with exit code 1".
    assert "cannot reach the head at 127.0.0.1:" in line, line
    assert "within 2000 ms (cluster.connect-timeout)" in line, line
    assert "exit code" not in line, line
    assert float(line.split()[2]) < 2 + 3, line  # the timeout, and a bit
    assert ("type error: init_process_group: timeout = 5: expected a "
            "datetime.timedelta") in done.stdout, done.stdout


DDP_LOOP = """
import stoker, sys, time, torch
import logging
logging.basicConfig(level=logging.INFO, format="%(message)s")
import torch.nn as nn
t = stoker.Trainer(head=sys.argv[1], name=sys.argv[2])
t.init_process_group()
model = nn.parallel.DistributedDataParallel(nn.Linear(3 * 32 * 32, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for i, (x, y) in enumerate(t):
    opt.zero_grad()
    nn.functional.cross_entropy(model(x.flatten(1)), y % 10).backward()
    opt.step()
    if i == 20:
        print("step 20", flush=True)
    time.sleep(0.01)
"""


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGINT])
def test_a_ddp_group_leaves_within_seconds_of_a_lost_rank(cluster_dir, sig):
    # kill -9 or Ctrl-C of one rank of two under DDP: the head names it,
    # the survivor's all-reduce fails, and every process has left within
    # 5 s of the signal (30-61 s before: each waited for its actor system,
    # which a thread that had asked the group's store kept waiting).
    c = Cluster(cluster_dir, sim_head_args())
    try:
        for name in ("t-0", "t-1"):
            c.start(name, [sys.executable, "-c", DDP_LOOP, c.head, name])
        c.worker("w-a")
        deadline = time.monotonic() + 120
        while "step 20" not in c.log("t-1"):
            assert time.monotonic() < deadline, c.log("t-1") + c.log("head")
            time.sleep(0.1)
        c.procs["t-1"].send_signal(sig)
        signalled = time.monotonic()
        for name in ("head", "t-0", "t-1"):
            code = c.wait(name, 60)
            assert code not in (None, 0), (name, c.log(name))
            assert time.monotonic() - signalled < 5, (name, c.log(name))
        assert "run failed: trainer rank 1 on node 't-1' exited before the " \
            "run ended" in c.log("head"), c.log("head")
        assert "Connection" in c.log("t-0"), c.log("t-0")  # gloo's error
        # and the head's reason, naming the rank that failed
        assert "the head says the run failed: trainer rank 1 on node " \
            "'t-1' exited before the run ended" in c.log("t-0"), \
            c.log("t-0")
    finally:
        c.stop()


def test_an_exception_in_a_python_trainer_names_the_lost_node(cluster_dir):
    c = Cluster(cluster_dir, sim_head_args())
    try:
        for name, what in (("t-0", "run"), ("t-1", "raise")):
            c.start(name, [sys.executable, "-c", LOOP, c.head, name, what])
        c.worker("w-a")
        assert c.wait("t-1", 120) not in (None, 0), c.log("t-1")
        assert "ZeroDivisionError" in c.log("t-1")
        started = time.monotonic()
        assert c.wait("head", 60) == 1, c.log("head")
        assert time.monotonic() - started < 5, c.log("head")
        # The failure line, not the join line that names 't-1' too.
        assert "run failed: trainer rank 1 on node 't-1' exited before " \
            "the run ended (the Python process exited while its loop was " \
            "running)" in c.log("head"), c.log("head")
        assert c.wait("t-0", 60) is not None, c.log("t-0")
    finally:
        c.stop()


TRAIN_ALL = """
import stoker, sys
import logging
logging.basicConfig(level=logging.INFO, format="%(message)s")
keys = {"tls": {"dir": sys.argv[3]}} if sys.argv[3] != "-" else {}
t = stoker.Trainer(head=sys.argv[1], name=sys.argv[2], **keys)
print("rank", t.rank, "of", t.world_size, flush=True)
for epoch in range(t.epochs):
    for x, y in t:
        pass
t.close()
print("done", flush=True)
"""


def test_a_python_trainer_joins_a_tls_cluster_with_its_node_keys(cluster_dir):
    certs = os.path.join(cluster_dir, "certs")
    subprocess.run([os.path.join(SOURCE_DIR, "tools", "ops", "make-certs"), certs,
                    "head", "t-0", "w-a"], check=True,
                   capture_output=True)
    tls = "--tls.dir=" + certs
    c = Cluster(cluster_dir, [tls, "--node.name=head",
                              "--cluster.nodes=[\"t-0:trainer\", "
                              "\"w-a:worker:1\"]",
                              "--pipeline.height=32", "--pipeline.width=32",
                              "--pipeline.dataset-size=640",
                              "--pipeline.batch-size=16",
                              "--pipeline.epochs=2"])
    try:
        # Without the cluster's keys it is refused, saying why.
        c.start("stranger", [sys.executable, "-c", TRAIN_ALL, c.head, "t-0",
                             "-"])
        assert c.wait("stranger", 60) not in (None, 0), c.log("stranger")
        assert "tls" in c.log("stranger"), c.log("stranger")
        c.start("t-0", [sys.executable, "-c", TRAIN_ALL, c.head, "t-0",
                        certs])
        c.start("w-a", [NODE, "--role=worker", "--node.name=w-a",
                        "--cluster.head=" + c.head, tls])
        assert c.wait("head", 120) == 0, c.log("head") + c.log("t-0")
        assert c.wait("t-0", 60) == 0, c.log("t-0")
        assert "done" in c.log("t-0")
    finally:
        c.stop()
    report = json.load(open(c.report))
    assert report["missing"] == 0 and report["duplicates"] == 0
    assert report["trainers"][0]["device"] == "python"


PART = """
import pickle, stoker, sys
import logging
logging.basicConfig(level=logging.INFO, format="%(message)s")
head, out, state_in, stop_after = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
state = pickle.load(open(state_in, "rb")) if state_in != "-" else None
t = stoker.Trainer(head=head, name="t-0", state=state)
seen = []
for epoch in range(t.epoch, t.epochs):
    for x, y in t:
        seen.append((t.last_batch.epoch, list(t.last_batch.sample_ids)))
        if len(seen) == stop_after:
            break
    if len(seen) == stop_after:
        break
pickle.dump({"seen": seen, "state": t.state_dict()}, open(out, "wb"))
t.close()
"""


def small_head_args():
    return ["--cluster.nodes=[\"t-0:trainer\", \"w-a:worker:1\"]",
            "--pipeline.height=32", "--pipeline.width=32",
            "--pipeline.dataset-size=640", "--pipeline.batch-size=16",
            "--pipeline.epochs=2"]


def test_a_python_trainer_goes_on_from_its_state_dict(cluster_dir):
    import pickle
    first_out = os.path.join(cluster_dir, "first.pickle")
    first = Cluster(cluster_dir, small_head_args())
    try:
        first.start("t-0", [sys.executable, "-c", PART, first.head,
                            first_out, "-", "15"])
        first.worker("w-a")
        # The loop stops after 15 of epoch 1's 40 batches: that run stops
        # on purpose (exit 0, status stopped), naming why; what it trained
        # is in the saved state.
        assert first.wait("head", 120) == 0, first.log("head")
        assert "run stopped early (the loop closed its loader at " \
            "loader.epoch 0" in first.log("head"), first.log("head")
        assert first.wait("t-0", 60) is not None, first.log("t-0")
    finally:
        first.stop()
    saved = pickle.load(open(first_out, "rb"))
    assert len(saved["seen"]) == 15
    state_file = os.path.join(cluster_dir, "state.pickle")
    pickle.dump(saved["state"], open(state_file, "wb"))
    second_dir = os.path.join(cluster_dir, "again")
    os.mkdir(second_dir)
    second_out = os.path.join(second_dir, "second.pickle")
    second = Cluster(second_dir, small_head_args())
    try:
        second.start("t-0", [sys.executable, "-c", PART, second.head,
                             second_out, state_file, "0"])
        second.worker("w-a")
        assert second.wait("head", 120) == 0, second.log("head")
        assert second.wait("t-0", 60) == 0, second.log("t-0")
    finally:
        second.stop()
    rest = pickle.load(open(second_out, "rb"))["seen"]
    for epoch in (0, 1):
        ids = [i for e, batch in saved["seen"] + rest if e == epoch
               for i in batch]
        assert sorted(ids) == list(range(640)), epoch  # once each
    report = json.load(open(second.report))
    assert report["missing"] == 0 and report["duplicates"] == 0, report


GROUP_PART = """
import os, pickle, stoker, sys, time
import logging
logging.basicConfig(level=logging.INFO, format="%(message)s")
head, name, out, state_in, stop_after = sys.argv[1:6]
stop_after = int(stop_after)
state = pickle.load(open(state_in, "rb")) if state_in != "-" else None
t = stoker.Trainer(head=head, name=name, state=state)
seen = []
for epoch in range(t.epoch, t.epochs):
    for x, y in t:
        seen.append((t.last_batch.epoch, list(t.last_batch.sample_ids)))
        if len(seen) == stop_after:
            break
    if len(seen) == stop_after:
        break
pickle.dump({"seen": seen, "state": t.state_dict()}, open(out + ".tmp", "wb"))
os.rename(out + ".tmp", out)
# Every rank saves after the same step before any leaves (one that left
# first would end the run under the others), as a DDP loop saves together.
deadline = time.monotonic() + 60
while (not all(os.path.exists(o) for o in sys.argv[6:])
       and time.monotonic() < deadline):
    time.sleep(0.05)
t.close()
"""


def group_head_args():
    return ["--cluster.nodes=[\"t-0:trainer\", \"t-1:trainer\", "
            "\"w-a:worker:1\"]",
            "--pipeline.height=32", "--pipeline.width=32",
            "--pipeline.dataset-size=640", "--pipeline.batch-size=16",
            "--pipeline.epochs=2"]


def test_a_python_group_goes_on_from_every_ranks_state_dict(cluster_dir):
    import pickle

    def run(tmp, states, stop_after):
        c = Cluster(tmp, group_head_args())
        outs = {n: os.path.join(tmp, n + ".pickle") for n in ("t-0", "t-1")}
        try:
            for name in ("t-0", "t-1"):
                c.start(name, [sys.executable, "-c", GROUP_PART, c.head, name,
                               outs[name], states[name], str(stop_after),
                               *outs.values()])
            c.worker("w-a")
            code = c.wait("head", 120)
            for name in ("t-0", "t-1"):
                assert c.wait(name, 60) is not None, c.log(name)
        finally:
            c.stop()
        return c, code, outs

    # The loops stop after 7 steps each (of epoch 1's 20 per rank): the
    # run stops; each rank's state says what it trained.
    first, code, outs = run(cluster_dir, {"t-0": "-", "t-1": "-"}, 7)
    assert code == 0, first.log("head")  # stopped on purpose
    assert "run stopped early" in first.log("head"), first.log("head")
    saved = {n: pickle.load(open(outs[n], "rb")) for n in outs}
    states = {}
    for name, s in saved.items():
        assert len(s["seen"]) == 7
        assert s["state"]["world"] == 2
        states[name] = os.path.join(cluster_dir, name + ".state")
        pickle.dump(s["state"], open(states[name], "wb"))
    assert saved["t-0"]["state"]["rank"] == 0
    assert saved["t-1"]["state"]["rank"] == 1

    # Each rank given the other's state: refused by name, nothing trained.
    swapped_dir = os.path.join(cluster_dir, "swapped")
    os.mkdir(swapped_dir)
    swapped, code, _ = run(swapped_dir, {"t-0": states["t-1"],
                                         "t-1": states["t-0"]}, 0)
    assert code != 0, swapped.log("head")
    assert "resumes from the state_dict() of rank 1 of a group of 2, but " \
           "is rank 0" in swapped.log("t-0"), swapped.log("t-0")

    # Each rank given its own: the run goes on; every sample once.
    again_dir = os.path.join(cluster_dir, "again")
    os.mkdir(again_dir)
    again, code, outs = run(again_dir, states, 0)
    assert code == 0, again.log("head") + again.log("t-0")
    rest = [b for n in outs for b in pickle.load(open(outs[n], "rb"))["seen"]]
    before = saved["t-0"]["seen"] + saved["t-1"]["seen"]
    for epoch in (0, 1):
        ids = [i for e, batch in before + rest if e == epoch for i in batch]
        assert sorted(ids) == list(range(640)), epoch  # once each
    report = json.load(open(again.report))
    assert report["missing"] == 0 and report["duplicates"] == 0, report
