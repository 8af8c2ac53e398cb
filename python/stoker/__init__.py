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

import torch  # noqa: F401  (its libraries and tensor type, before _stoker)

from . import _stoker
from ._config import ConfigError
from ._run import RunFailed
from .loader import DataLoader
from .trainer import Trainer, _interface_of  # noqa: F401  (tests use it)

__all__ = ["DataLoader", "Trainer", "BatchInfo", "ConfigError", "RunFailed",
           "image_checksums", "__version__"]

#: The release, the same as stoker-node's and the CMake project's.
__version__: str = _stoker.__version__

BatchInfo = _stoker.BatchInfo

# Shown as stoker.NAME (in tracebacks, help()), where users reach them.
for _public in (ConfigError, RunFailed, DataLoader, Trainer):
    _public.__module__ = __name__
del _public


def image_checksums(images: torch.Tensor) -> list[int]:
    """Stoker's checksum of each image of a float32 (N, ...) tensor."""
    return _stoker.image_checksums(images.contiguous())
