"""stoker.Trainer: a trainer node of a Stoker cluster whose step is the
loop, a rank of a data-parallel group."""

from __future__ import annotations

import datetime
import os
import socket
from typing import Any, Optional

from ._config import ConfigError, PathLike, node_flags
from ._run import RunFailed, _Loop

# A backstop for a Trainer's group: the head's cluster.join-timeout and
# heartbeats end a run whose group never forms well before this.
_GROUP_WAIT_S = 600.0


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

    def __init__(self, head: str, name: str,
                 config_file: Optional[PathLike] = None,
                 state: Optional[dict[str, Any]] = None,
                 **keys: Any) -> None:
        host, sep, port = str(head).rpartition(":")
        if not sep or not host or not port.isdigit():
            raise ConfigError(f"head = {head!r}: expected HOST:PORT")
        args = ["--progress=off", "--trainer.count=1"]
        args += node_flags(config_file, keys)
        args += ["--role=trainer", "--node.name=" + str(name),
                 "--cluster.head=" + str(head)]
        super().__init__(args)
        self._name = name
        self._group = None
        if state is not None:  # before the start: the trainer resumes
            self._resume_from(state)
        self._start()  # joins the head now: the run waits for its nodes

    def _group_info(self) -> tuple[Any, ...]:
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

    def _world(self) -> int:
        return self._group_info()[1]

    def _place(self) -> tuple[int, int]:
        if self._group is None:  # not formed yet: nothing taken either
            state = self._state or {}
            return int(state.get("rank", 0)), int(state.get("world", 1))
        return self._group[0], self._group[1]

    def _join_run(self) -> None:
        # The run's shape comes from the head with the trainer's group.
        self._group_info()

    def _has_test(self) -> bool:
        return self._shape("eval_batches") > 0 and self.rank == 0

    @property
    def rank(self) -> int:
        """This trainer's rank in the data-parallel group."""
        return self._group_info()[0]

    @property
    def world_size(self) -> int:
        """The group's size."""
        return self._group_info()[1]

    def init_process_group(
            self, timeout: Optional[datetime.timedelta] = None) -> Any:
        """torch.distributed's default group, gloo, over the group's store
        on the head (keys under a prefix of their own); with one rank, over
        a store of this process. Returns the process group.

        `timeout` (a datetime.timedelta, as torch.distributed's
        init_process_group takes) bounds every collective of the group
        (gloo's calls: an all-reduce whose peer died raises after it at the
        latest); None: the run's trainer.collective-timeout. Waits for the
        group to form (up to the head's cluster.join-timeout)."""
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


def _interface_of(address: Optional[str]) -> Optional[str]:
    """The name of this host's network interface with IPv4 `address` (gloo
    listens there, as cluster.bind says), or None."""
    if not address or address in ("0.0.0.0", "::"):
        return None
    import psutil  # Debian's python3-psutil
    for name, addresses in psutil.net_if_addrs().items():
        if any(a.family == socket.AF_INET and a.address == address
               for a in addresses):
            return name
    return None


