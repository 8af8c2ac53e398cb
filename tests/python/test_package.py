"""The package as pip installs it (pyproject.toml, offline): a wheel built
from this source tree, installed into a directory of its own, imported in
a fresh interpreter that sees nothing of the build tree."""

import os
import subprocess
import sys
import tempfile

from conftest import SOURCE_DIR, small_run


def test_pip_installs_a_typed_package_of_stokers_version():
    build = os.environ["BUILD_DIR"]  # its objects are reused
    with tempfile.TemporaryDirectory(prefix="stoker-pip-") as target:
        env = dict(os.environ, BUILD_DIR=build, STOKER_BUILD_JOBS="1",
                   PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1")
        env.pop("PYTHONPATH", None)
        done = subprocess.run(
            [sys.executable, "-m", "pip", "install", "--no-build-isolation",
             "--no-deps", "--target", target, SOURCE_DIR],
            capture_output=True, text=True, timeout=600, env=env)
        assert done.returncode == 0, done.stdout + done.stderr
        package = os.path.join(target, "stoker")
        for name in ("__init__.py", "py.typed", "_stoker.pyi", "loader.py",
                     "trainer.py"):
            assert os.path.exists(os.path.join(package, name)), name
        keys = small_run()  # 192 samples x 2 epochs
        code = f"""
import importlib.metadata, stoker
assert stoker.__file__.startswith({target!r}), stoker.__file__
assert stoker.__version__ == importlib.metadata.version("stoker"), \\
    (stoker.__version__, importlib.metadata.version("stoker"))
with stoker.DataLoader(**{keys!r}) as loader:
    n = sum(len(labels) for epoch in range(loader.epochs)
            for _, labels in loader)
print("version", stoker.__version__, "samples", n)
"""
        env = dict(os.environ, PYTHONPATH=target)
        ran = subprocess.run([sys.executable, "-c", code],
                             capture_output=True, text=True, timeout=120,
                             env=env, cwd=target)
        assert ran.returncode == 0, ran.stdout + ran.stderr
        with open(os.path.join(SOURCE_DIR, "CMakeLists.txt")) as f:
            version = f.read().split("project(stoker VERSION ")[1].split()[0]
        assert f"version {version} samples 384" in ran.stdout, ran.stdout
