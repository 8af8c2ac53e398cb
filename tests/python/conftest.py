"""Shared by the Python package's tests (ctest runs them with PYTHONPATH at
the build tree's python/ and STOKER_NODE at its stoker-node)."""

import os
import subprocess
import sys


SOURCE_DIR = os.environ.get(
    "STOKER_SOURCE_DIR",
    os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))


# The stoker-node this build made (ctest passes its path).
NODE = os.environ.get("STOKER_NODE",
                      os.path.join(SOURCE_DIR, "build", "apps", "node",
                                   "stoker-node"))

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
