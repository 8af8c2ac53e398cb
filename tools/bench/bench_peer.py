"""The article's input pipeline through PyTorch's DataLoader, for
tools/bench/bench-peer: a random 224x224x3 float32 image per id (seeded by the
id), ToTensor, 10x GaussianBlur(11, sigma=(0.1, 2.0)), batches of 64.

  python3 bench_peer.py loader WORKERS BATCHES   -> images/s of the loader
  python3 bench_peer.py blur SECONDS             -> images/s of the blurs
                                                    alone, one thread

Prints one number. Debian's python3-torch and python3-torchvision.
"""
import sys
import time

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset
from torchvision import transforms

SIZE = (224, 224, 3)
BATCH = 64

pipeline = transforms.Compose(
    [transforms.ToTensor()]
    + [transforms.GaussianBlur(11, sigma=(0.1, 2.0)) for _ in range(10)])


class RandomImages(Dataset):
    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        image = np.random.default_rng(i).standard_normal(SIZE,
                                                         dtype=np.float32)
        return pipeline(image), i % 1000


def loader_rate(workers, batches):
    torch.set_num_threads(1)  # one core per process, as in its workers
    data = RandomImages(batches * BATCH)
    loader = DataLoader(data, batch_size=BATCH, num_workers=workers,
                        shuffle=False)
    # From the start: with workers, batches made while the first one is
    # awaited would otherwise count without their time. Starting the
    # worker processes (~0.5 s) is in it, as in a training run.
    start = time.perf_counter()
    n = 0
    for images, _ in loader:
        assert images.shape == (BATCH, 3, 224, 224)
        n += images.shape[0]
    return n / (time.perf_counter() - start)


def blur_rate(seconds):
    torch.set_num_threads(1)
    image = np.random.default_rng(0).standard_normal(SIZE, dtype=np.float32)
    pipeline(image)
    n, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        pipeline(image)
        n += 1
    return n / (time.perf_counter() - start)


if __name__ == "__main__":
    mode = sys.argv[1] if len(sys.argv) > 1 else ""
    if mode == "loader" and len(sys.argv) == 4:
        print(f"{loader_rate(int(sys.argv[2]), int(sys.argv[3])):.2f}")
    elif mode == "blur" and len(sys.argv) == 3:
        print(f"{blur_rate(float(sys.argv[2])):.2f}")
    else:
        sys.exit("usage: bench_peer.py loader WORKERS BATCHES | blur SECONDS")
