"""Types of Stoker's native module (python/src/stoker_module.cpp)."""

from typing import Optional

import torch

__version__: str


class BatchInfo:
    """Where the batch a loop got last came from."""
    epoch: int
    batch_id: int
    part: str
    sample_ids: list[int]
    checksums: list[int]


class BatchEvent(tuple):  # a struct sequence, as os.stat_result
    images: torch.Tensor
    labels: torch.Tensor
    info: BatchInfo


class PhaseEnd:
    epoch: int
    part: str


class RunEnded:
    error: Optional[str]


class LineQueue:
    def take(self, timeout_ms: int) -> tuple[list[tuple[int, str]], bool]:
        ...


class Session:
    def __init__(self, args: list[str]) -> None: ...
    def start(self, state: Optional[bytes] = None, rank: int = 0,
              world: int = 1) -> None: ...
    def next(self, timeout_ms: int, release_first: bool = False
             ) -> Optional[BatchEvent | PhaseEnd | RunEnded]: ...
    def release(self) -> None: ...
    def cursor(self) -> Optional[bytes]: ...
    def close(self, reason: str, stopped: bool = False) -> None: ...
    def join(self, seconds: float) -> bool: ...
    def report_json(self) -> str: ...
    def group(self, seconds: float) -> Optional[tuple[
        int, int, str, str, int, object, float]]: ...
    def shape(self) -> dict[str, int]: ...
    def steps_per_epoch(self, world: int) -> int: ...
    @property
    def local(self) -> bool: ...
    @property
    def bytes_copied(self) -> int: ...
    @property
    def ended(self) -> bool: ...
    def lines(self) -> LineQueue: ...


def image_checksums(images: torch.Tensor) -> list[int]: ...
