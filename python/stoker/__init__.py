"""Stoker for PyTorch training loops (docs/python.md).

    loader = stoker.DataLoader(config_file="config/fashion-mnist.ini",
                               pipeline={"batch_size": 64}, worker={"count": 2})
    for epoch in range(loader.epochs):
        for images, labels in loader:
            ...  # one step of your loop

The loader runs Stoker's own pipeline inside this process: a source, the
router and CPU workers that are C++ threads (they never take the GIL), and
a trainer whose step is your loop. A batch arrives as a torch tensor over
the buffer a worker filled (no copy); it is acknowledged when the loop asks
for the next one, so Stoker's exactly-once ledger, hedging and re-leases
work as for its C++ trainers.

Every line the run says (what stoker-node prints) goes to the `logging`
logger "stoker", none to standard output: `logging.basicConfig(level=
logging.INFO)` shows them; `log={"level": "warning"}` says fewer.
"""

import atexit
import json
import logging
import os
import threading
import weakref

import torch  # noqa: F401  (its libraries and tensor type, before _stoker)

from . import _stoker

__all__ = ["DataLoader", "Trainer", "BatchInfo", "ConfigError", "RunFailed",
           "image_checksums"]


class ConfigError(ValueError):
    """A key, value or shape Stoker does not take; the message is the one
    stoker-node prints for it."""


class RunFailed(RuntimeError):
    """The run failed; `first_error` says why (the run report's), `report`
    is the report (a dict) where one was made."""

    def __init__(self, first_error, report=None):
        super().__init__(first_error)
        self.first_error = first_error
        self.report = report


# How long one wait inside next() lasts before Python gets control back
# (Ctrl-C is seen between two waits).
_POLL_MS = 100

# A backstop for a Trainer's group: the head's cluster.join-timeout and
# heartbeats end a run whose group never forms well before this.
_GROUP_WAIT_S = 600.0


def _value_text(section, key, value):
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, (str, os.PathLike)):
        return os.fspath(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(json.dumps(str(v)) for v in value) + "]"
    where = f"{section}[{key!r}]" if section else key
    raise ConfigError(f"{where} = {value!r}: expected a bool, number, "
                      f"string or list of strings")


def _flags(config_file, keys):
    """stoker-node's flags for a config file and keyword arguments: one dict
    per section (pipeline={"batch_size": 64}) or a top-level key
    (report="r.json"); Python names, '_' for '-'."""
    args = []
    if config_file is not None:
        args.append("--config-file=" + os.fspath(config_file))
    for name, value in keys.items():
        if "." in name or "-" in name:
            section, _, key = name.replace("-", "_").partition(".")
            raise ConfigError(
                f"{name!r} is a flat key; expected it in its section's "
                f"dict, e.g. {section}={{{key!r}: ...}}")
        if isinstance(value, dict):
            for key, v in value.items():
                if not isinstance(key, str) or "." in key or "-" in key:
                    raise ConfigError(
                        f"{name}[{key!r}]: expected a key's Python name "
                        f"(e.g. 'batch_size' for {name}.batch-size)")
                args.append(f"--{name}.{key.replace('_', '-')}="
                            + _value_text(name, key, v))
        else:
            args.append(f"--{name.replace('_', '-')}="
                        + _value_text(None, name, value))
    return args


_log = logging.getLogger("stoker")


def _session(args):
    try:
        return _stoker.Session(args)
    except ValueError as err:
        raise ConfigError(str(err)) from None


def _pump_lines(lines):
    """Hands a run's lines to the logger "stoker" until the run is down."""
    more = True
    while more:
        taken, more = lines.take(200)
        for level, text in taken:
            _log.log(level, text)


def _start_pump(session):
    pump = threading.Thread(target=_pump_lines, args=(session.lines(),),
                            name="stoker-log", daemon=True)
    pump.start()
    return pump


_open_loaders = weakref.WeakSet()


@atexit.register
def _close_open_loaders():
    # A loop that ended with an exception (or a script that never closed
    # its loader): the run ends now, the trainer named as gone.
    for loader in list(_open_loaders):
        loader._abandon("the Python process exited while its loop was "
                        "running")


BatchInfo = _stoker.BatchInfo


def image_checksums(images):
    """Stoker's checksum of each image of a float32 (N, ...) tensor."""
    return _stoker.image_checksums(images.contiguous())


class _Loop:
    """What DataLoader and Trainer share: a run whose trainer is this loop,
    one epoch per iteration."""

    def __init__(self, args):
        self._session = _session(args)
        self._pump = _start_pump(self._session)
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

    def _shape(self, key):
        shape = self._session.shape()
        if not shape:
            self._join_run()
            shape = self._session.shape()
        return shape[key]

    def _join_run(self):
        """Starts the run (a Trainer: joins the head and waits for its
        pipeline)."""
        self._start()

    def _world(self):
        return 1

    def __len__(self):
        """Training batches per epoch (this rank's)."""
        self._shape("epochs")
        return self._session.steps_per_epoch(self._world())

    @property
    def epochs(self):
        """The run's epochs (pipeline.epochs)."""
        return self._shape("epochs")

    @property
    def epoch(self):
        """The epoch the next iteration yields (0-based)."""
        return self._epoch

    @property
    def batch_size(self):
        return self._shape("batch_size")

    @property
    def dataset_size(self):
        return self._shape("dataset_size")

    @property
    def bytes_copied(self):
        """Bytes of images that reached this loop in memory other than the
        buffers the run filled (0: every batch without a copy)."""
        return self._session.bytes_copied

    @property
    def evaluates(self):
        """Whether this loop gets test batches (trainer.eval; in a group,
        rank 0's): iterate test() after each epoch's training."""
        return self._has_test()

    def _has_test(self):
        return self._shape("eval_batches") > 0

    def set_epoch(self, epoch):
        """Stoker shuffles every epoch itself (pipeline.seed); this only
        checks that `epoch` is the one the next iteration yields."""
        if epoch != self._epoch:
            raise ValueError(f"set_epoch({epoch}): the next epoch this "
                             f"loader yields is {self._epoch}")

    def __iter__(self):
        return _Phase(self, "train")

    def test(self):
        """The current epoch's test batches (trainer.eval = true): iterate
        after the epoch's training batches."""
        if not self._has_test():
            raise ValueError("test(): this loop gets no test batches; "
                             "expected trainer={'eval': True} (in a group, "
                             "rank 0 evaluates)")
        return _Phase(self, "test")

    # -- state (torchdata's StatefulDataLoader contract) --------------------

    def state_dict(self):
        """The data cursor: every batch this loop took so far counts as
        trained. Save it beside the model; a new loader given it with
        load_state_dict() yields every other sample of the run once."""
        cursor = self._session.cursor() if self._started else None
        if cursor is None and self._state:
            return dict(self._state)
        rank, world = self._place()
        return {"format": 1, "cursor": cursor, "epoch": self._epoch,
                "rank": rank, "world": world}

    def _place(self):
        return 0, 1  # a DataLoader's trainer is alone

    def _resume_from(self, state):
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
    def report(self):
        """The run report (a dict) once a local run has ended, else None
        (a Trainer's run is reported by its head)."""
        text = self._session.report_json()
        return json.loads(text) if text else None

    def close(self):
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
            _log.warning("stoker: the run ended, but its network shutdown "
                         "is still waiting after 20 s (a peer that went "
                         "away); going on")
        self._pump.join(2.0)  # its last lines, before close() returns
        _open_loaders.discard(self)
        if self._error:
            raise RunFailed(self._error, self.report)

    def __enter__(self):
        return self

    def __exit__(self, kind, value, tb):
        if kind is None:
            self.close()
        else:
            self._abandon(f"the loop raised {kind.__name__}: {value}")

    def __del__(self):
        try:
            if self._started and not self._finished:
                self._abandon("the loader was deleted before its run ended")
        except Exception:
            pass

    # -- inside -------------------------------------------------------------

    def _start(self):
        if not self._started:
            state = self._state or {}
            try:
                self._session.start(state.get("cursor"),
                                    int(state.get("rank", 0)),
                                    int(state.get("world", 1)))
            except ValueError as err:
                raise ConfigError(str(err)) from None
            self._started = True

    def _abandon(self, reason, stopped=False):
        if self._started and not self._finished:
            self._session.close(reason, stopped)
            self._session.join(30.0)
            self._pump.join(2.0)
            self._finished = True
        _open_loaders.discard(self)

    def _release(self):
        if self._holding:
            self._session.release()
            self._holding = False

    def _wait(self, release_first=False):
        """The next event; with `release_first`, the ack of the batch held
        and the wait in one call."""
        event = self._session.next(_POLL_MS, release_first)
        while event is None:  # Ctrl-C is seen between two waits
            event = self._session.next(_POLL_MS, False)
        return event

    def _handle(self, event):
        kind = event[0]
        if kind == "phase_end":
            _, epoch, part = event
            if part == "train" and self._has_test():
                self._phase = "test"
            else:
                self._phase = "train"
                self._epoch = epoch + 1
        elif kind == "finished":
            self._finished = True
            self._error = event[1]

    def _next(self, part):
        if self._finished or part != self._phase:
            self._release()  # the previous batch's step is done: its ack
            if self._finished:
                if self._error:
                    raise RunFailed(self._error, self.report)
                raise StopIteration
            return None  # this phase has ended
        event = self._wait(release_first=self._holding)
        self._holding = False
        if event[0] == "batch":
            _, images, labels, self.last_batch = event
            self._holding = True
            return images, labels
        self._handle(event)
        if event[0] == "finished" and self._error:
            raise RunFailed(self._error, self.report)
        return None


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
    """

    def __init__(self, config_file=None, **keys):
        args = ["--progress=off", "--trainer.count=1", "--role=local"]
        super().__init__(args + _flags(config_file, keys))

    def load_state_dict(self, state):
        """Goes on from `state` (a state_dict() of an earlier loader of the
        same run); before the first iteration only. (A Trainer takes its
        state when it is made: stoker.Trainer(..., state=STATE).)"""
        self._resume_from(state)


class Trainer(_Loop):
    """A trainer node of a Stoker cluster whose step is this Python loop:
    joins the head at `head` ("HOST:PORT") as node `name` (one of the head's
    cluster.nodes with role trainer), and iterates like a DataLoader over
    the batches the cluster's workers make for it. Keyword arguments are
    this node's own keys as for DataLoader (tls={"dir": ...},
    cluster={"bind": ...}); the pipeline is the head's.

    rank, world_size: this rank's place in the data-parallel group (they
    wait for the group to form); init_process_group() makes torch.distributed
    meet the other ranks at the group's store on the head (no port of its
    own), for DistributedDataParallel over gloo.

    `state`: a state_dict() of an earlier Trainer of the same run, which
    this one goes on from. In a group every rank is given its own rank's
    state_dict(), all saved after the same step (save them together, as
    the model's); anything else is refused by name when the group forms.
    """

    def __init__(self, head, name, config_file=None, state=None, **keys):
        host, sep, port = str(head).rpartition(":")
        if not sep or not host or not port.isdigit():
            raise ConfigError(f"head = {head!r}: expected HOST:PORT")
        args = ["--progress=off", "--trainer.count=1"]
        args += _flags(config_file, keys)
        args += ["--role=trainer", "--node.name=" + str(name),
                 "--cluster.head=" + str(head)]
        super().__init__(args)
        self._name = name
        self._group = None
        if state is not None:  # before the start: the trainer resumes
            self._resume_from(state)
        self._start()  # joins the head now: the run waits for its nodes

    def _group_info(self):
        if self._group is None:
            group = self._session.group(_GROUP_WAIT_S)
            if group is None:
                if not self._session.ended:
                    self._abandon(f"trainer {self._name!r}: no group formed "
                                  f"within {_GROUP_WAIT_S:.0f} s")
                while not self._finished:
                    self._handle(self._wait())
                raise RunFailed(self._error or
                                f"trainer {self._name!r}: no group formed "
                                f"within {_GROUP_WAIT_S:.0f} s")
            self._group = group
        return self._group

    def _world(self):
        return self._group_info()[1]

    def _place(self):
        if self._group is None:  # not formed yet: nothing taken either
            state = self._state or {}
            return int(state.get("rank", 0)), int(state.get("world", 1))
        return self._group[0], self._group[1]

    def _join_run(self):
        # The run's shape comes from the head with the trainer's group.
        self._group_info()

    def _has_test(self):
        return self._shape("eval_batches") > 0 and self.rank == 0

    @property
    def rank(self):
        """This trainer's rank in the data-parallel group."""
        return self._group_info()[0]

    @property
    def world_size(self):
        """The group's size."""
        return self._group_info()[1]

    def init_process_group(self, timeout=None):
        """torch.distributed's default group, gloo, over the group's store
        on the head (keys under a prefix of their own); with one rank, over
        a store of this process. Returns the process group.

        `timeout` (a datetime.timedelta, as torch.distributed's
        init_process_group takes) bounds every collective of the group
        (gloo's calls: an all-reduce whose peer died raises after it at the
        latest); None: the run's trainer.collective-timeout. Waits for the
        group to form (up to the head's cluster.join-timeout)."""
        import datetime
        import torch.distributed as dist
        if timeout is not None and not isinstance(timeout,
                                                  datetime.timedelta):
            raise TypeError(f"init_process_group: timeout = {timeout!r}: "
                            f"expected a datetime.timedelta, as "
                            f"torch.distributed.init_process_group takes")
        rank, world, _, interface, generation, store, collective_s = \
            self._group_info()
        if timeout is None:
            timeout = datetime.timedelta(seconds=collective_s)
        if store is None:
            store = dist.HashStore()
        else:
            store = dist.PrefixStore(f"stoker-python/{generation}/", store)
        iface = _interface_of(interface)
        if iface:
            os.environ.setdefault("GLOO_SOCKET_IFNAME", iface)
        dist.init_process_group(
            "gloo", store=store, rank=rank, world_size=world,
            timeout=timeout)
        return dist.group.WORLD


def _interface_of(address):
    """The name of this host's network interface with IPv4 `address` (gloo
    listens there, as cluster.bind says), or None."""
    if not address or address in ("0.0.0.0", "::"):
        return None
    import socket
    import psutil  # Debian's python3-psutil
    for name, addresses in psutil.net_if_addrs().items():
        if any(a.family == socket.AF_INET and a.address == address
               for a in addresses):
            return name
    return None


class _Phase:
    """One epoch's training (or test) batches; an iterator left early is
    taken up where it stopped by the next one (no batch is dropped)."""

    def __init__(self, loader, part):
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

    def __iter__(self):
        return self

    def __next__(self):
        if self._done:
            raise StopIteration
        batch = self._loader._next(self._part)
        if batch is None:
            self._done = True
            raise StopIteration
        return batch
