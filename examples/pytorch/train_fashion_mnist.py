#!/usr/bin/python3
"""Fashion-MNIST's small CNN (the one config/fashion-mnist.ini trains in
C++) written in PyTorch, fed by Stoker.

One process, Stoker's workers as C++ threads inside it:

    PYTHONPATH=build/python /usr/bin/python3 examples/pytorch/train_fashion_mnist.py

A cluster: a head and worker nodes (stoker-node), and two of these
processes as its trainer nodes, a data-parallel group under
DistributedDataParallel (gloo, meeting at the head's store):

    stoker-node --config-file=config/fashion-mnist.ini --role=head \\
        --cluster.port=7000 \\
        --cluster.nodes='["t-0:trainer", "t-1:trainer", "w-a:worker:1", "w-b:worker:1"]'
    stoker-node --role=worker --node.name=w-a --cluster.head=127.0.0.1:7000
    stoker-node --role=worker --node.name=w-b --cluster.head=127.0.0.1:7000
    .../train_fashion_mnist.py --head 127.0.0.1:7000 --name t-0
    .../train_fashion_mnist.py --head 127.0.0.1:7000 --name t-1

The test accuracy is measured on Stoker's test split (trainer.eval), which
rank 0 evaluates after each epoch, as the C++ trainer does.
"""

import argparse
import hashlib
import json
import logging
import os
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

import stoker

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


class CNN(nn.Module):
    """libactors/src/train/cnn.cpp: two 3x3 convolutions with 2x2 pools,
    then 128 hidden units."""

    def __init__(self, channels=1, height=28, width=28, classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, 32, 3, padding=1)
        self.conv2 = nn.Conv2d(32, 64, 3, padding=1)
        self.fc1 = nn.Linear(64 * (height // 4) * (width // 4), 128)
        self.fc2 = nn.Linear(128, classes)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = F.relu(self.fc1(x.flatten(1)))
        return self.fc2(x)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", default=os.path.join(
        ROOT, "config", "fashion-mnist.ini"))
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--samples", type=int, default=0,
                    help="train on the first N samples (0: all 60,000)")
    ap.add_argument("--eval-samples", type=int, default=0,
                    help="evaluate on N test samples (0: all 10,000)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--lr", type=float, default=0.002)
    ap.add_argument("--head", help="HOST:PORT of a Stoker head: run as a "
                    "trainer node of its cluster")
    ap.add_argument("--name", default="trainer-0",
                    help="this trainer node's name (with --head)")
    ap.add_argument("--tls-dir", help="this node's TLS files (tls.dir)")
    ap.add_argument("--result", help="write the final figures as JSON here")
    args = ap.parse_args()
    # Stoker's lines (joining, the group, the run's end) go to the logger
    # "stoker"; shown here as a node shows them.
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    torch.manual_seed(0)
    torch.set_num_threads(1)

    if args.head:
        own = {"tls": {"dir": args.tls_dir}} if args.tls_dir else {}
        loader = stoker.Trainer(head=args.head, name=args.name, **own)
        print(f"{args.name}: rank {loader.rank} of {loader.world_size}",
              flush=True)
        loader.init_process_group()
    else:
        pipeline = {"epochs": args.epochs}
        if args.samples:
            pipeline["dataset_size"] = args.samples
        if args.eval_samples:
            pipeline["eval_size"] = args.eval_samples
        loader = stoker.DataLoader(config_file=args.config, pipeline=pipeline,
                                   worker={"count": args.workers},
                                   trainer={"eval": True})

    model = CNN()
    if args.head and loader.world_size > 1:
        model = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr,
                            weight_decay=0.01)
    steps = len(loader) * loader.epochs
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=args.lr,
                                                total_steps=max(1, steps))
    accuracy = None
    t0 = time.monotonic()
    for epoch in range(loader.epochs):
        model.train()
        total, count = 0.0, 0
        for images, labels in loader:
            opt.zero_grad()
            loss = F.cross_entropy(model(images), labels)
            loss.backward()
            opt.step()
            sched.step()
            total += loss.item()
            count += 1
        line = f"epoch {epoch + 1}: train_loss {total / max(1, count):.4f}"
        if loader.evaluates:  # rank 0's test split, after each epoch
            net = model.module if hasattr(model, "module") else model
            net.eval()
            correct = seen = 0
            with torch.no_grad():
                for images, labels in loader.test():
                    correct += (net(images).argmax(1) == labels).sum().item()
                    seen += len(labels)
            accuracy = correct / max(1, seen)
            line += f", test_accuracy {accuracy:.4f} ({seen} test samples)"
        print(line, flush=True)
    closing = time.monotonic()
    loader.close()
    close_s = time.monotonic() - closing
    elapsed = time.monotonic() - t0
    report = loader.report
    if report:
        print(f"report: {report['status']}, missing {report['missing']}, "
              f"duplicates {report['duplicates']}", flush=True)
    if args.result:
        # The parameters' bits: every rank of a DDP group must hold the
        # same model after each all-reduced step.
        net = model.module if hasattr(model, "module") else model
        digest = hashlib.sha256()
        for p in net.parameters():
            digest.update(p.detach().cpu().contiguous().numpy().tobytes())
        with open(args.result, "w") as out:
            json.dump({"test_accuracy": accuracy, "seconds": elapsed,
                       "steps": steps, "close_seconds": close_s,
                       "parameters_sha256": digest.hexdigest()}, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
