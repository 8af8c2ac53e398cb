"""Shared by the Python tools (tools/lib/): where the build is (BUILD_DIR,
default build/, as tools/setup; STOKER_NODE for the node binary), saying
progress, failing, and the median [min-max] every benchmark prints.

    # from a tool in tools/bench, data, ops or dev:
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
    import stoker_tools as tools
"""

from __future__ import annotations

import os
import statistics
import sys
from typing import NoReturn, Sequence

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.path.abspath(os.environ.get("BUILD_DIR",
                                       os.path.join(ROOT, "build")))
NODE = os.environ.get("STOKER_NODE",
                      os.path.join(BUILD, "apps", "node", "stoker-node"))


def say(tool: str, text: str) -> None:
    """A line about the tool's own progress, on standard error."""
    print(f"[{tool}] {text}", file=sys.stderr, flush=True)


def fail(tool: str, text: str, code: int = 1) -> NoReturn:
    """Says why and exits with `code` (2: bad usage)."""
    say(tool, text)
    sys.exit(code)


def spread(xs: Sequence[float], digits: int = 1) -> str:
    """'median  [min-max]' of a benchmark's rounds (the median right-aligned
    in 10 columns)."""
    return (f"{statistics.median(xs):10.{digits}f}  "
            f"[{min(xs):.{digits}f}-{max(xs):.{digits}f}]")


def rounds_arg(tool: str, argv: Sequence[str], default: int = 3) -> int:
    """A benchmark's ROUNDS argument (argv[1], `default` when absent): a
    positive integer, or a usage error (exit 2) that names the value."""
    if len(argv) < 2:
        return default
    try:
        rounds = int(argv[1])
    except ValueError:
        rounds = 0
    if rounds <= 0:
        fail(tool, f"ROUNDS = {argv[1]!r}: expected a positive integer",
             code=2)
    return rounds
