"""Shared by the Python package's tests (ctest runs them with PYTHONPATH at
the build tree's python/ and STOKER_NODE at its stoker-node)."""

import os
import subprocess
import sys
import tempfile
import time

import pytest


SOURCE_DIR = os.environ.get(
    "STOKER_SOURCE_DIR",
    os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))


# The stoker-node this build made (ctest passes its path).
NODE = os.environ.get("STOKER_NODE",
                      os.path.join(SOURCE_DIR, "build", "apps", "node",
                                   "stoker-node"))

# The Python trainer Cluster.python_trainer runs.
EXAMPLE = os.path.join(SOURCE_DIR, "examples", "pytorch",
                       "train_fashion_mnist.py")


class Cluster:
    """A head on a free loopback port and the processes started beside it;
    each logs to a file of its own under `tmp`."""

    def __init__(self, tmp, head_args):
        self.tmp = tmp
        self.procs = {}
        port_file = os.path.join(tmp, "head.port")
        self.report = os.path.join(tmp, "report.json")
        self.start("head", [NODE, "--role=head", "--cluster.port=0",
                            "--cluster.port-file=" + port_file,
                            "--report=" + self.report] + head_args)
        deadline = time.monotonic() + 20
        while not (os.path.exists(port_file)
                   and open(port_file).read().endswith("\n")):
            assert time.monotonic() < deadline, self.log("head")
            time.sleep(0.05)
        self.head = "127.0.0.1:" + open(port_file).read().strip()

    def start(self, name, argv):
        log = open(os.path.join(self.tmp, name + ".log"), "w")
        self.procs[name] = subprocess.Popen(argv, stdout=log,
                                            stderr=subprocess.STDOUT,
                                            env=os.environ.copy())
        return self.procs[name]

    def worker(self, name, extra=()):
        self.start(name, [NODE, "--role=worker", "--node.name=" + name,
                          "--cluster.head=" + self.head, *extra])

    def python_trainer(self, name, extra=()):
        return self.start(name, [sys.executable, EXAMPLE, "--head", self.head,
                                 "--name", name,
                                 "--result", self.result(name), *extra])

    def result(self, name):
        return os.path.join(self.tmp, name + ".json")

    def log(self, name):
        with open(os.path.join(self.tmp, name + ".log")) as f:
            return f.read()

    def wait(self, name, timeout):
        try:
            return self.procs[name].wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None

    def stop(self):
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait()


@pytest.fixture
def cluster_dir():
    with tempfile.TemporaryDirectory(prefix="stoker-py-") as tmp:
        yield tmp


def small_run(**sections):
    """Keyword arguments of a small synthetic run (32x32, 192 samples in
    batches of 16, 2 epochs, 2 workers); `sections` replace parts."""
    keys = {
        "pipeline": {"height": 32, "width": 32, "dataset_size": 192,
                     "batch_size": 16, "epochs": 2, "seed": 7,
                     "num_classes": 10},
        "worker": {"count": 2},
    }
    for name, values in sections.items():
        keys.setdefault(name, {}).update(values)
    return keys


def run_script(code, timeout=120, **popen):
    """Runs `code` in a fresh Debian python3 with this test's environment;
    returns the CompletedProcess (stdout and stderr as text)."""
    return subprocess.run([sys.executable, "-c", code], capture_output=True,
                          text=True, timeout=timeout, env=os.environ.copy(),
                          **popen)
