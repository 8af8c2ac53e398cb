"""A Python stage in the chain (`python(MODULE:CALLABLE)`), run by
stoker-node's workers in processes of their own: every sample once over
two epochs, a function that raises now and then (skipped, counted) or
always (the run fails, naming it), a module that is not there (refused
before the run), a stage process killed mid-run (nothing lost), and a
cluster whose hedged copies are compared with the ones trained on."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from conftest import NODE, SOURCE_DIR, Cluster

STAGE_MODULE = '''
import os, time, torch

def noisy(x):
    return x + torch.rand(x.shape)

def unlucky(x):
    if torch.rand(1).item() < 0.03:
        raise ValueError("an unlucky sample")
    return x

def boom(x):
    raise ValueError("this stage always fails")

def unseeded(x):
    # Draws from a generator seeded by the OS, not Stoker: copies differ.
    g = torch.Generator().manual_seed(int.from_bytes(os.urandom(8), "big"))
    return x + torch.rand(x.shape, generator=g)

def mixup(x, y):  # per batch, torchvision's MixUp in a few lines
    lam = float(torch.distributions.Beta(0.2, 0.2).sample())
    soft = torch.nn.functional.one_hot(y, 10).float()
    return (lam * x + (1 - lam) * x.roll(1, 0),
            lam * soft + (1 - lam) * soft.roll(1, 0))

def batch_boom(x, y):
    if int(y[0]) == 3:
        raise RuntimeError("a batch starting with label 3")
    return x, y

def slow(x):
    # Says the run is under way (the test kills a stage process then).
    open(os.path.join(os.path.dirname(__file__), "running"), "a").close()
    time.sleep(0.004)
    return x * 0.5
'''


def node_args(tmp_path, fn, *extra, samples=512, epochs=2, workers=2):
    (tmp_path / "stage_fns.py").write_text(STAGE_MODULE)
    report = tmp_path / "report.json"
    return [NODE, "--role=local", "--progress=off", "--trainer.device=sim",
            "--pipeline.height=32", "--pipeline.width=32",
            "--pipeline.batch-size=32",
            "--pipeline.dataset-size=%d" % samples,
            "--pipeline.epochs=%d" % epochs,
            "--pipeline.transforms=[\"python(stage_fns:%s)\", "
            "\"to-tensor\"]" % fn,
            "--python.path=[\"%s\"]" % tmp_path,
            "--worker.count=%d" % workers,
            "--report=%s" % report, *extra], report


def run_node(args, timeout=120):
    return subprocess.run(args, capture_output=True, text=True,
                          timeout=timeout)


def test_two_epochs_through_a_python_stage_deliver_every_sample_once(
        tmp_path):
    args, report = node_args(tmp_path, "noisy")
    done = run_node(args)
    assert done.returncode == 0, done.stdout + done.stderr
    r = json.loads(report.read_text())
    assert r["status"] == "ok", r
    assert r["samples_delivered"] == 1024
    assert r["missing"] == 0 and r["duplicates"] == 0
    assert r["skipped_sources"] == []
    # Each stage's time per sample, the Python one beside the C++ one.
    stages = {s["stage"]: s for s in r["stages"]}
    assert set(stages) == {"python(stage_fns:noisy)", "to-tensor"}, stages
    assert all(s["samples"] == 1024 for s in stages.values()), stages
    assert "python(stage_fns:noisy)" in done.stdout + done.stderr


def test_an_exception_now_and_then_skips_those_samples_and_counts_them(
        tmp_path):
    args, report = node_args(tmp_path, "unlucky",
                             "--pipeline.max-failed-share=0.1")
    done = run_node(args)
    assert done.returncode == 0, done.stdout + done.stderr
    r = json.loads(report.read_text())
    assert r["status"] == "ok", r
    assert r["missing"] == 0 and r["duplicates"] == 0
    [stage] = r["skipped_sources"]
    assert stage["source"] == "transform python(stage_fns:unlucky)"
    assert "raised ValueError: an unlucky sample" in stage["reason"]
    # The draws are the sample's own: the same samples fail each epoch's
    # way, and every one is delivered or counted.
    assert 0 < stage["samples"] < 1024 * 0.1
    assert r["samples_delivered"] + stage["samples"] == 1024
    # The log names the stage with its count, once an epoch, and gives
    # the first exception's whole traceback, once.
    out = done.stdout + done.stderr
    assert "transform python(stage_fns:unlucky):" in out
    assert out.count("the first exception's traceback") == 1, out
    told = out[out.index("the first exception's traceback"):]
    assert "Traceback (most recent call last)" in told, told
    assert 'stage_fns.py", line 9, in unlucky' in told, told
    assert "ValueError: an unlucky sample" in told, told


def test_a_stage_that_always_raises_fails_the_run_naming_it(tmp_path):
    args, _ = node_args(tmp_path, "boom", samples=4096, epochs=1)
    start = time.monotonic()
    done = run_node(args, timeout=60)
    took = time.monotonic() - start
    out = done.stdout + done.stderr
    assert done.returncode == 1, out
    assert "python(stage_fns:boom) failed on" in out, out
    assert "past pipeline.max-failed-share = 0.01" in out, out
    assert "ValueError: this stage always fails" in out, out
    assert took < 30, took


def test_a_module_that_is_not_there_is_refused_before_the_run(tmp_path):
    args, _ = node_args(tmp_path, "noisy")
    args = [a.replace("stage_fns:noisy", "no_such_module:noisy")
            for a in args]
    done = run_node(args, timeout=60)
    assert done.returncode == 2, done.stdout + done.stderr
    assert ("python(no_such_module:noisy): cannot import it "
            "(ModuleNotFoundError: No module named 'no_such_module')"
            in done.stderr), done.stderr
    assert "python.path = [\"%s\"]" % tmp_path in done.stderr
    assert "epoch 1" not in done.stdout


def children_of(pid):
    found = []
    for task in os.listdir("/proc/%d/task" % pid):
        path = "/proc/%d/task/%s/children" % (pid, task)
        try:
            with open(path) as f:
                found += [int(c) for c in f.read().split()]
        except OSError:
            pass
    return found


def test_a_stage_process_killed_mid_run_loses_no_sample(tmp_path):
    # 2 x 1024 samples at 4 ms each over 2 workers: about 4 s of work.
    args, report = node_args(tmp_path, "slow", samples=1024)
    node = subprocess.Popen(args, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    try:
        # Mid-run: once the stage has made samples (its processes are
        # started, primed, before the run: a death then is a start-up's).
        deadline = time.monotonic() + 30
        while (not (tmp_path / "running").exists()
               and time.monotonic() < deadline):
            time.sleep(0.1)
        stage = children_of(node.pid)
        assert stage, "the stage made no sample within 30 s"
        time.sleep(0.5)
        os.kill(stage[0], signal.SIGKILL)
        out, _ = node.communicate(timeout=120)
    finally:
        if node.poll() is None:
            node.kill()
    assert node.returncode == 0, out
    r = json.loads(report.read_text())
    assert r["status"] == "ok", r
    assert r["missing"] == 0 and r["duplicates"] == 0
    assert r["skipped_sources"] == [], r["skipped_sources"]
    assert r["samples_delivered"] == 2048
    # The stage sleeps 4 ms a sample: its time says so (a sample the
    # killed process held is counted once, its retry in its time).
    stage = [s for s in r["stages"] if s["stage"] == "python(stage_fns:slow)"]
    assert stage and stage[0]["ms_per_sample"] >= 4.0, r["stages"]


def jpeg_folder(root, count=12):
    """An image folder (one class) of `count` JPEGs of 96x72 noise."""
    from PIL import Image
    import numpy
    folder = os.path.join(root, "jpegs", "a")
    os.makedirs(folder)
    rng = numpy.random.default_rng(5)
    for i in range(count):
        pixels = rng.integers(0, 256, (72, 96, 3), dtype=numpy.uint8)
        Image.fromarray(pixels).save(os.path.join(folder, "%02d.jpg" % i),
                                     quality=90)
    return os.path.join(root, "jpegs")


def loader_images(data, transforms, decode_region, stage_dir):
    import stoker
    loader = stoker.DataLoader(
        pipeline={"source": "image-folder", "data": data,
                  "transforms": transforms, "decode_region": decode_region,
                  "height": 32, "width": 32, "batch_size": 4, "epochs": 1},
        python={"path": [str(stage_dir)]},
        worker={"count": 2})
    out = {}
    for images, _ in loader:
        for i, sample in enumerate(loader.last_batch.sample_ids):
            out[sample] = images[i].clone()
    loader.close()
    report = loader.report  # once the run has ended
    assert report["status"] == "ok", report
    assert report["skipped_sources"] == [], report["skipped_sources"]
    return out


def test_a_stage_after_a_crop_gets_bytes_fused_or_not(tmp_path):
    # In the loop's own process: the DataLoader's workers start the stage's
    # processes. Right after decode + crop the function is promised uint8
    # CHW, whether the crop ran fused on the JPEG or entry by entry.
    (tmp_path / "stage_fns.py").write_text(STAGE_MODULE + '''
def invert_bytes(x):
    assert x.dtype == torch.uint8 and x.dim() == 3 and x.shape[0] == 3, \\
        (x.dtype, x.shape)
    return 255 - x
''')
    data = jpeg_folder(str(tmp_path))
    crop = ["decode", "random-resized-crop(32)"]
    for fused in (True, False):
        plain = loader_images(data, crop + ["to-tensor"], fused, tmp_path)
        inverted = loader_images(
            data, crop + ["python(stage_fns:invert_bytes)", "to-tensor"],
            fused, tmp_path)
        assert sorted(plain) == sorted(inverted) == list(range(12))
        for sample, image in plain.items():
            # The fused pass's floats rounded to bytes: within half a level.
            diff = (inverted[sample] - (1 - image)).abs().max().item()
            assert diff <= 0.5 / 255 + 1e-6, (fused, sample, diff)


def test_the_loader_takes_a_callable_and_runs_it_outside_this_process(
        tmp_path, monkeypatch):
    import importlib
    import sys
    import torch
    import stoker
    (tmp_path / "pid_stage.py").write_text('''
import os, torch
def stamp_pid(x):
    return torch.full_like(x, float(os.getpid()))
class Scale:
    def __call__(self, x):
        return x * 2
twice = Scale()
''')
    monkeypatch.syspath_prepend(str(tmp_path))
    pid_stage = importlib.import_module("pid_stage")
    loader = stoker.DataLoader(
        transforms=[pid_stage.twice, pid_stage.stamp_pid, "to-tensor"],
        pipeline={"height": 32, "width": 32, "dataset_size": 64,
                  "batch_size": 16, "epochs": 1},
        worker={"count": 2})
    pids = set()
    for images, _ in loader:
        pids |= {int(p) for p in images[:, 0, 0, 0].tolist()}
    loader.close()
    report = loader.report
    assert report["status"] == "ok", report
    assert report["missing"] == 0 and report["duplicates"] == 0
    assert os.getpid() not in pids  # never this process
    assert 1 <= len(pids) <= 2, pids  # one process per worker at most
    # What cannot be imported by reference is refused, saying how.
    with pytest.raises(stoker.ConfigError, match="top level of a module"):
        stoker.DataLoader(transforms=[lambda x: x, "to-tensor"])


def test_a_stage_written_as_an_entry_gets_this_interpreter_and_path():
    import sys
    from stoker._config import python_stage_keys
    for entry in ("python(m:f)", "python-pil(m:f)", " python-batch (m:f)"):
        keys = python_stage_keys({}, ["to-tensor", entry])
        assert keys["python"]["executable"] == sys.executable, entry
        assert keys["python"]["path"], entry
    # A chain without one leaves the python section alone.
    assert "python" not in python_stage_keys({}, ["to-tensor"])


def running(pid):
    """Whether `pid` is a process that has not ended (a zombie has)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(") ", 1)[1][0] != "Z"
    except (OSError, IndexError):
        return False


def test_stage_processes_leave_with_a_node_killed_mid_run(tmp_path):
    args, _ = node_args(tmp_path, "slow", samples=4096)
    node = subprocess.Popen(args, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        stage = []
        while len(stage) < 2 and time.monotonic() < deadline:
            time.sleep(0.5)
            stage = children_of(node.pid)
        assert stage, "no stage process started within 30 s"
        node.kill()
        node.wait(timeout=10)
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and any(map(running, stage)):
            time.sleep(0.2)
        alive = [p for p in stage if running(p)]
        assert not alive, "stage processes left behind: %s" % alive
    finally:
        if node.poll() is None:
            node.kill()


def test_a_stage_makes_the_same_bits_with_one_worker_or_two(tmp_path,
                                                             monkeypatch):
    # The stage draws from torch's generator, seeded per sample: whichever
    # worker (and stage process) makes a sample, its bits are the same.
    import importlib
    import stoker
    (tmp_path / "draw_stage.py").write_text('''
import torch
def jitter(x):
    return x + torch.rand(x.shape)
''')
    monkeypatch.syspath_prepend(str(tmp_path))
    draw_stage = importlib.import_module("draw_stage")
    made = {}
    for workers in (1, 2):
        loader = stoker.DataLoader(
            transforms=[draw_stage.jitter, "to-tensor"],
            pipeline={"height": 32, "width": 32, "dataset_size": 128,
                      "batch_size": 16, "epochs": 1, "seed": 3},
            worker={"count": workers})
        images = {}
        for x, _ in loader:
            for i, sample in enumerate(loader.last_batch.sample_ids):
                images[sample] = x[i].clone()
        loader.close()
        assert loader.report["status"] == "ok", loader.report
        made[workers] = images
    assert sorted(made[1]) == sorted(made[2]) == list(range(128))
    for sample in range(128):
        assert made[1][sample].equal(made[2][sample]), sample


def test_a_stage_that_burns_cpu_costs_the_loops_thread_nothing(
        tmp_path, monkeypatch):
    # The stage spins 3 ms of CPU a sample in its own processes; the loop
    # thread's CPU inside next() is what it pays for a batch whatever the
    # chain (no transform takes its GIL or its thread).
    import importlib
    import resource
    import stoker
    (tmp_path / "burn_stage.py").write_text('''
import time
def burn(x):
    until = time.thread_time() + 0.003
    while time.thread_time() < until:
        pass
    return x
''')
    monkeypatch.syspath_prepend(str(tmp_path))
    burn_stage = importlib.import_module("burn_stage")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    loader = stoker.DataLoader(
        transforms=[burn_stage.burn, "to-tensor"],
        pipeline={"height": 32, "width": 32, "dataset_size": 256,
                  "batch_size": 16, "epochs": 1},
        worker={"count": 2})
    inside = 0.0
    batches = 0
    it = iter(loader)
    while True:
        t0 = time.thread_time()
        try:
            next(it)
        except StopIteration:
            break
        inside += time.thread_time() - t0
        batches += 1
    loader.close()
    assert loader.report["status"] == "ok", loader.report
    assert batches == 16
    stage_cpu = 256 * 0.003
    # The stage's CPU went to child processes (reaped by close()), not to
    # this one's threads.
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    children = after.ru_utime - before.ru_utime
    print("loop thread in next():", inside, "s; stage processes:",
          children, "s")
    assert children >= 0.8 * stage_cpu, (children, stage_cpu)
    assert inside < 0.05 * stage_cpu, (inside, stage_cpu)
    stages = {s["stage"]: s for s in loader.report["stages"]}
    assert stages["python(burn_stage:burn)"]["ms_per_sample"] >= 3.0


def test_the_reference_recipe_example_trains_with_its_python_stages(
        tmp_path):
    # examples/pytorch/train_reference_recipe.py, a few steps on 12 photos
    # (the recipe's stages are imported by the workers' stage processes).
    data = jpeg_folder(str(tmp_path), count=12)
    done = subprocess.run(
        [sys.executable, os.path.join(SOURCE_DIR, "examples", "pytorch",
                                      "train_reference_recipe.py"),
         "--data", data, "--steps", "2", "--crop", "64",
         "--batch-size", "4", "--workers", "2"],
        capture_output=True, text=True, timeout=300, env=os.environ.copy())
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    assert "epoch 0 step 2 loss" in out, out
    assert "2 steps; stages per sample:" in out, out
    for stage in ("python-pil(reference_recipe:trivial_wide)",
                  "python(reference_recipe:random_erasing)",
                  "python-batch(reference_recipe:mixup_cutmix)"):
        assert stage in out, out


def batch_stage_args(tmp_path, fn, *extra, device="sim"):
    args, report = node_args(tmp_path, fn, "--pipeline.num-classes=10",
                             "--trainer.device=" + device, *extra)
    for i, a in enumerate(args):
        if a.startswith("--pipeline.transforms="):
            args[i] = ("--pipeline.transforms=[\"horizontal-flip\", "
                       "\"to-tensor\", \"python-batch(stage_fns:%s)\"]"
                       % fn)
    return args, report


def test_a_batch_stage_mixes_each_batch_once_with_soft_labels(tmp_path):
    # stoker-node's workers (2, each with its stage process) run MixUp on
    # every batch before it leaves: 2 epochs, every sample once; the C++
    # trainer (a real torch model on the CPU) trains on the soft labels.
    args, report = batch_stage_args(
        tmp_path, "mixup", "--trainer.model=cnn", device="cpu")
    done = run_node(args, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    r = json.loads(report.read_text())
    assert r["status"] == "ok", r
    assert r["samples_delivered"] == 1024
    assert r["missing"] == 0 and r["duplicates"] == 0
    assert r["rejected_batches"] == 0, r
    stages = {s["stage"]: s for s in r["stages"]}
    assert stages["python-batch(stage_fns:mixup)"]["samples"] == 1024
    assert r["train_loss"] == r["train_loss"], r  # measured, not NaN


def test_a_batch_stage_that_raises_skips_that_batch_counted(tmp_path):
    args, report = batch_stage_args(tmp_path, "batch_boom",
                                    "--pipeline.max-failed-share=0.5")
    done = run_node(args)
    assert done.returncode == 0, done.stdout + done.stderr
    r = json.loads(report.read_text())
    # Batches of 32 in id order: those starting at a multiple of 32 with
    # label id % 10 == 3 fail whole (ids 0, 32, ...: 3 of them, 96, ...).
    [stage] = r["skipped_sources"]
    assert stage["source"] == "transform python-batch(stage_fns:batch_boom)"
    assert "raised RuntimeError: a batch starting with label 3" \
        in stage["reason"]
    assert stage["samples"] % 32 == 0 and stage["samples"] > 0, stage
    assert r["samples_delivered"] + stage["samples"] == 1024
    assert r["missing"] == 0 and r["duplicates"] == 0


def test_the_loader_yields_soft_labels_and_the_same_bits_on_any_worker(
        tmp_path, monkeypatch):
    import importlib
    import stoker
    (tmp_path / "stage_fns.py").write_text(STAGE_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    stage_fns = importlib.import_module("stage_fns")
    made = {}
    for workers in (1, 2):
        loader = stoker.DataLoader(
            transforms=["to-tensor", "python-batch(stage_fns:mixup)"],
            pipeline={"height": 16, "width": 16, "dataset_size": 128,
                      "batch_size": 16, "epochs": 1, "seed": 3,
                      "num_classes": 10},
            python={"path": [str(tmp_path)]},
            worker={"count": workers})
        batches = {}
        for x, y in loader:
            assert y.dtype == torch_float32() and tuple(y.shape) == (16, 10)
            assert (y.sum(1) - 1).abs().max().item() < 1e-5
            batches[loader.last_batch.batch_id] = (x.clone(), y.clone())
        loader.close()
        assert loader.report["status"] == "ok", loader.report
        made[workers] = batches
    assert sorted(made[1]) == sorted(made[2]) and len(made[1]) == 8
    for batch_id, (x, y) in made[1].items():
        assert x.equal(made[2][batch_id][0]), batch_id
        assert y.equal(made[2][batch_id][1]), batch_id
    del stage_fns


def torch_float32():
    import torch
    return torch.float32


TRAINER_LOOP = """
import stoker, sys
t = stoker.Trainer(head=sys.argv[1], name=sys.argv[2])
for x, y in t:
    pass
t.close()
"""


@pytest.mark.parametrize("fn", ["noisy", "unseeded"])
def test_a_cluster_runs_the_stage_on_its_workers_and_copies_agree(
        tmp_path, cluster_dir, fn):
    # Head, two worker nodes with the stage (one 6x slower, so round-robin
    # gives it stragglers that are hedged on the other), a Python trainer.
    # A hedged copy is made from the same samples and draws: the same bits
    # (the trainer compares each dropped copy with the one trained on);
    # a stage drawing from the OS's generator makes copies that differ.
    (tmp_path / "stage_fns.py").write_text(STAGE_MODULE)
    c = Cluster(cluster_dir, [
        "--cluster.nodes=[\"t-0:trainer\", \"fast:worker:1\", "
        "\"slow:worker:1\"]",
        "--pipeline.height=32", "--pipeline.width=32",
        "--pipeline.batch-size=16", "--pipeline.dataset-size=1600",
        "--pipeline.epochs=1",
        "--pipeline.transforms=[\"python(stage_fns:%s)\"]" % fn,
        "--router.policy=round-robin", "--router.hedge-factor=1.5",
        "--router.report-interval=20ms"])
    try:
        c.start("t-0", [sys.executable, "-c", TRAINER_LOOP, c.head, "t-0"])
        path = "--python.path=[\"%s\"]" % tmp_path
        c.worker("fast", ["--worker.count=1", path])
        c.worker("slow", ["--worker.count=1", "--worker.slowdown=6", path])
        assert c.wait("head", 120) == 0, c.log("head") + c.log("slow")
        for name in ("t-0", "fast", "slow"):
            assert c.wait(name, 30) == 0, c.log(name)
    finally:
        c.stop()
    r = json.load(open(c.report))
    assert r["status"] == "ok", r
    assert r["missing"] == 0 and r["duplicates"] == 0, r
    assert r["samples_delivered"] == 1600
    assert r["trainers"][0]["device"] == "python"
    assert r["dropped_copies"] > 0, r  # hedging happened
    assert any(s["stage"] == "python(stage_fns:%s)" % fn
               for s in r["stages"]), r["stages"]
    if fn == "noisy":
        assert r["copy_mismatches"] == 0, c.log("head")
    else:
        assert r["copy_mismatches"] > 0, r
        assert "is not the bits of the first" in c.log("t-0"), c.log("t-0")
