"""stoker.DataLoader: a Stoker run in this process whose trainer is the
loop."""

from __future__ import annotations

from typing import Any, Optional, Sequence

from ._config import PathLike, node_flags, python_stage_keys
from ._run import _Loop


class DataLoader(_Loop):
    """An iterable over (images, labels) batches, one epoch per iteration,
    from a Stoker run in this process (role local).

    Keyword arguments are the config's keys, one dict per section with the
    keys' Python names: pipeline={"batch_size": 64, "epochs": 2},
    worker={"count": 2}, trainer={"eval": True}; a top-level key as itself
    (report="run.json"). A flat "pipeline.batch-size" is a ConfigError.
    `config_file` defaults to Stoker's embedded config/local.ini.

    images: float32 (batch, channels, height, width) over the worker's
    buffer; labels: int64 (batch,). The run has pipeline.epochs epochs;
    with trainer.eval, loader.test() iterates each epoch's test batches
    after its training ones.

    transforms: the chain (pipeline.transforms) as config entries and
    callables: a callable runs as a python(MODULE:NAME) stage in processes
    of the workers' own, never in this one (docs/python.md, "Your own
    transforms"), so it must be importable: a module-level function or a
    module-level name bound to a transform object.
    """

    def __init__(self, config_file: Optional[PathLike] = None,
                 transforms: Optional[Sequence[Any]] = None,
                 **keys: Any) -> None:
        args = ["--progress=off", "--trainer.count=1", "--role=local"]
        keys = python_stage_keys(keys, transforms)
        super().__init__(args + node_flags(config_file, keys))

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Goes on from `state` (a state_dict() of an earlier loader of the
        same run); before the first iteration only. (A Trainer takes its
        state when it is made: stoker.Trainer(..., state=STATE).)"""
        self._resume_from(state)


