"""Builds the native part of the Python package `stoker` (its _stoker
module) with this repository's CMake, for pip's setuptools backend
(pyproject.toml). The version is the CMake project's.

BUILD_DIR (as tools/setup and every tool take it): an already configured
build tree to build the module in (its objects are reused; the package
test uses the test's own build); default: a tree of setuptools' own under
build/. STOKER_BUILD_JOBS: make's parallelism (default: every core).
"""

import os
import re
import shutil
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = os.path.dirname(os.path.abspath(__file__))


def cmake_version():
    with open(os.path.join(ROOT, "CMakeLists.txt"), encoding="utf-8") as f:
        m = re.search(r"project\(stoker VERSION ([0-9.]+)", f.read())
    if not m:
        sys.exit("setup.py: CMakeLists.txt has no 'project(stoker VERSION "
                 "X.Y.Z' line; expected the project's version there")
    return m.group(1)


class cmake_extension(Extension):
    def __init__(self, name):
        super().__init__(name, sources=[])


class cmake_build(build_ext):
    """Configures (unless BUILD_DIR is given) and builds the CMake
    target stoker_python, then puts its module where setuptools wants it."""

    def build_extension(self, ext):
        tree = os.environ.get("BUILD_DIR") or os.path.join(
            ROOT, "build", "pip")
        tree = os.path.abspath(tree)
        if not os.path.exists(os.path.join(tree, "CMakeCache.txt")):
            print(f"stoker: configuring CMake in {tree}", flush=True)
            self.spawn(["cmake", "-S", ROOT, "-B", tree,
                        "-DCMAKE_BUILD_TYPE=Release",
                        "-DSTOKER_PYTHON=ON",
                        f"-DPython3_EXECUTABLE={sys.executable}"])
        jobs = os.environ.get("STOKER_BUILD_JOBS") or str(os.cpu_count() or 1)
        print(f"stoker: building the native module in {tree} "
              f"({jobs} jobs; the whole library the first time)", flush=True)
        self.spawn(["cmake", "--build", tree, "--target", "stoker_python",
                    "-j", jobs])
        built = os.path.join(tree, "python", "stoker")
        names = [n for n in os.listdir(built)
                 if n.startswith("_stoker") and n.endswith(".so")]
        if len(names) != 1:
            sys.exit(f"setup.py: expected one _stoker*.so in {built}, "
                     f"found {names}")
        target = self.get_ext_fullpath(ext.name)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copyfile(os.path.join(built, names[0]), target)


os.makedirs(os.path.join(ROOT, "build", "setuptools"), exist_ok=True)
setup(version=cmake_version(),
      ext_modules=[cmake_extension("stoker._stoker")],
      cmdclass={"build_ext": cmake_build})
