"""The run a loop iterates: what DataLoader and Trainer share (the run's
events, epochs and phases, the data cursor, the end)."""

from __future__ import annotations

import atexit
import json
import weakref
from typing import Any, Optional, Union

import torch

from . import _stoker
from ._config import ConfigError
from ._log import logger, start_pump

Event = Union[_stoker.BatchEvent, _stoker.PhaseEnd, _stoker.RunEnded]
Batch = tuple[torch.Tensor, torch.Tensor]


class RunFailed(RuntimeError):
    """The run failed; `first_error` says why (the run report's), `report`
    is the report (a dict) where one was made."""

    def __init__(self, first_error: str,
                 report: Optional[dict[str, Any]] = None) -> None:
        super().__init__(first_error)
        self.first_error = first_error
        self.report = report


# How long one wait inside next() lasts before Python gets control back
# (Ctrl-C is seen between two waits).
_POLL_MS = 100


def _session(args: list[str]) -> _stoker.Session:
    try:
        return _stoker.Session(args)
    except ValueError as err:
        raise ConfigError(str(err)) from None


_open_loaders = weakref.WeakSet()


@atexit.register
def _close_open_loaders():
    # A loop that ended with an exception (or a script that never closed
    # its loader): the run ends now, the trainer named as gone. A run that
    # failed on its own (RunFailed, the script then exits) may still be
    # tearing its threads down: they end before the interpreter does (a
    # thread alive at the process's end aborted it: "terminate called
    # without an active exception", exit -6).
    for loader in list(_open_loaders):
        loader._abandon("the Python process exited while its loop was "
                        "running")
        if loader._started:
            loader._session.join(30.0)


class _Loop:
    """What DataLoader and Trainer share: a run whose trainer is this loop,
    one epoch per iteration."""

    def __init__(self, args: list[str]) -> None:
        self._session = _session(args)
        self._pump = start_pump(self._session)
        self._state = None
        self._started = False
        self._holding = False
        self._epoch = 0          # the next training phase's epoch
        self._phase = "train"    # the phase the next batch belongs to
        self._finished = False
        self._error = None
        self.last_batch = None
        _open_loaders.add(self)

    # -- the run ------------------------------------------------------------

    def _shape(self, key: str) -> int:
        shape = self._session.shape()
        if not shape:
            self._join_run()
            shape = self._session.shape()
        return shape[key]

    def _join_run(self) -> None:
        """Starts the run (a Trainer: joins the head and waits for its
        pipeline)."""
        self._start()

    def _world(self) -> int:
        return 1

    def __len__(self) -> int:
        """Training batches per epoch (this rank's)."""
        self._shape("epochs")
        return self._session.steps_per_epoch(self._world())

    @property
    def epochs(self) -> int:
        """The run's epochs (pipeline.epochs)."""
        return self._shape("epochs")

    @property
    def epoch(self) -> int:
        """The epoch the next iteration yields (0-based)."""
        return self._epoch

    @property
    def batch_size(self) -> int:
        return self._shape("batch_size")

    @property
    def dataset_size(self) -> int:
        return self._shape("dataset_size")

    @property
    def bytes_copied(self) -> int:
        """Bytes of images that reached this loop in memory other than the
        buffers the run filled (0: every batch without a copy)."""
        return self._session.bytes_copied

    @property
    def evaluates(self) -> bool:
        """Whether this loop gets test batches (trainer.eval; in a group,
        rank 0's): iterate test() after each epoch's training."""
        return self._has_test()

    def _has_test(self) -> bool:
        return self._shape("eval_batches") > 0

    def set_epoch(self, epoch: int) -> None:
        """Stoker shuffles every epoch itself (pipeline.seed); this only
        checks that `epoch` is the one the next iteration yields."""
        if epoch != self._epoch:
            raise ValueError(f"set_epoch({epoch}): the next epoch this "
                             f"loader yields is {self._epoch}")

    def __iter__(self) -> _Phase:
        return _Phase(self, "train")

    def test(self) -> _Phase:
        """The current epoch's test batches (trainer.eval = true): iterate
        after the epoch's training batches."""
        if not self._has_test():
            raise ValueError("test(): this loop gets no test batches; "
                             "expected trainer={'eval': True} (in a group, "
                             "rank 0 evaluates)")
        return _Phase(self, "test")

    # -- state (torchdata's StatefulDataLoader contract) --------------------

    def state_dict(self) -> dict[str, Any]:
        """The data cursor: every batch this loop took so far counts as
        trained. Save it beside the model; a new loader given it with
        load_state_dict() yields every other sample of the run once."""
        cursor = self._session.cursor() if self._started else None
        if cursor is None and self._state:
            return dict(self._state)
        rank, world = self._place()
        return {"format": 1, "cursor": cursor, "epoch": self._epoch,
                "rank": rank, "world": world}

    def _place(self) -> tuple[int, int]:
        return 0, 1  # a DataLoader's trainer is alone

    def _resume_from(self, state: dict[str, Any]) -> None:
        # Goes on from `state` (a state_dict()); before the first batch.
        if self._started:
            raise RuntimeError("load_state_dict() after iterating: expected "
                               "it on a new loader, before its first batch")
        if not isinstance(state, dict) or state.get("format") != 1:
            raise ConfigError(f"state: {type(state).__name__} is not a "
                              f"stoker state_dict()")
        self._state = dict(state)
        self._epoch = int(state.get("epoch", 0))

    # -- the end ------------------------------------------------------------

    @property
    def report(self) -> Optional[dict[str, Any]]:
        """The run report (a dict) once a local run has ended, else None
        (a Trainer's run is reported by its head)."""
        text = self._session.report_json()
        return json.loads(text) if text else None

    def close(self) -> None:
        """Acknowledges the batch the loop holds; if the run has more, ends
        it: the run stops (its report's status "stopped", every batch the
        loop took counted as trained, the rest not trained). Waits for the
        run's threads. Raises RunFailed if the run failed."""
        if not self._started:
            _open_loaders.discard(self)
            return
        self._release()
        if not self._finished:
            if self._epoch >= self.epochs:
                # every epoch was iterated: the run's end is on its way
                while not self._finished:
                    self._handle(self._wait())
            else:
                # On purpose: the run ends as stopped (the report says so,
                # and what the loop trained), not failed.
                self._abandon("the loop closed its loader at loader.epoch "
                              f"{self._epoch} ({self._epoch} of "
                              f"{self.epochs} epoch(s) done)", stopped=True)
                return
        if not self._session.join(20.0):
            logger.warning("stoker: the run ended, but its network shutdown "
                         "is still waiting after 20 s (a peer that went "
                         "away); going on")
        self._pump.join(2.0)  # its last lines, before close() returns
        _open_loaders.discard(self)
        if self._error:
            raise RunFailed(self._error, self.report)

    def __enter__(self) -> "_Loop":
        return self

    def __exit__(self, kind: Any, value: Any, tb: Any) -> None:
        if kind is None:
            self.close()
        else:
            self._abandon(f"the loop raised {kind.__name__}: {value}")

    def __del__(self) -> None:
        try:
            if self._started and not self._finished:
                self._abandon("the loader was deleted before its run ended")
        except Exception:
            pass

    # -- inside -------------------------------------------------------------

    def _start(self) -> None:
        if not self._started:
            state = self._state or {}
            try:
                self._session.start(state.get("cursor"),
                                    int(state.get("rank", 0)),
                                    int(state.get("world", 1)))
            except ValueError as err:
                raise ConfigError(str(err)) from None
            self._started = True

    def _abandon(self, reason: str, stopped: bool = False) -> None:
        if self._started and not self._finished:
            self._session.close(reason, stopped)
            self._session.join(30.0)
            self._pump.join(2.0)
            self._finished = True
        _open_loaders.discard(self)

    def _release(self) -> None:
        if self._holding:
            self._session.release()
            self._holding = False

    def _wait(self, release_first: bool = False) -> Event:
        """The next event; with `release_first`, the ack of the batch held
        and the wait in one call."""
        event = self._session.next(_POLL_MS, release_first)
        while event is None:  # Ctrl-C is seen between two waits
            event = self._session.next(_POLL_MS, False)
        return event

    def _handle(self, event: Event) -> None:
        if isinstance(event, _stoker.PhaseEnd):
            if event.part == "train" and self._has_test():
                self._phase = "test"
            else:
                self._phase = "train"
                self._epoch = event.epoch + 1
        elif isinstance(event, _stoker.RunEnded):
            self._finished = True
            self._error = event.error

    def _next(self, part: str) -> Optional[Batch]:
        if self._finished or part != self._phase:
            self._release()  # the previous batch's step is done: its ack
            if self._finished:
                if self._error:
                    raise RunFailed(self._error, self.report)
                raise StopIteration
            return None  # this phase has ended
        event = self._wait(release_first=self._holding)
        self._holding = False
        if isinstance(event, _stoker.BatchEvent):
            self.last_batch = event.info
            self._holding = True
            return event.images, event.labels
        self._handle(event)
        if isinstance(event, _stoker.RunEnded) and self._error:
            raise RunFailed(self._error, self.report)
        return None


class _Phase:
    """One epoch's training (or test) batches; an iterator left early is
    taken up where it stopped by the next one (no batch is dropped)."""

    def __init__(self, loader: _Loop, part: str) -> None:
        if loader._finished and not loader._error:
            raise RuntimeError(f"the run had {loader.epochs} epoch(s) "
                               f"(pipeline.epochs); all were iterated")
        if part != loader._phase:
            if part == "train":
                raise RuntimeError(
                    f"epoch {loader._epoch + 1}'s test batches come first: "
                    f"iterate loader.test() after each epoch's training "
                    f"(trainer.eval = true)")
            raise RuntimeError(f"loader.test(): epoch {loader._epoch + 1}'s "
                               f"training batches come first")
        loader._start()
        self._loader = loader
        self._part = part
        self._done = False

    def __iter__(self) -> "_Phase":
        return self

    def __next__(self) -> Batch:
        if self._done:
            raise StopIteration
        batch = self._loader._next(self._part)
        if batch is None:
            self._done = True
            raise StopIteration
        return batch
