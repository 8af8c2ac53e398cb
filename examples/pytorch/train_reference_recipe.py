#!/usr/bin/python3
"""torchvision's reference classification recipe (ResNet-18, SGD with
label smoothing 0.1, RandomResizedCrop, flip, TrivialAugmentWide,
Normalize, RandomErasing(0.25), MixUp/CutMix) fed by Stoker: the crop and
flip in C++, TrivialAugmentWide and RandomErasing as Python stages in the
workers' processes and MixUp/CutMix on each batch (reference_recipe.py),
the training loop as it is (its labels soft, as MixUp makes them).

    tools/data/make-photos /tmp/photos        # or any image folder
    PYTHONPATH=build/python /usr/bin/python3 \\
        examples/pytorch/train_reference_recipe.py --data /tmp/photos/train

The folder is torchvision's ImageFolder layout (one directory per class).
On a CPU this trains slowly; --steps stops after that many steps.
"""

import argparse
import logging
import os
import sys
import time

import torch
import torch.nn as nn
import torchvision

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import reference_recipe  # noqa: E402 (the stages' module, importable)

import stoker  # noqa: E402


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", required=True, help="an image folder")
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--steps", type=int, default=0,
                   help="stop after this many steps (0: every epoch)")
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--crop", type=int, default=224)
    p.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    args = p.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    torch.manual_seed(0)

    loader = stoker.DataLoader(
        transforms=reference_recipe.train_transforms(args.crop),
        pipeline={"source": "image-folder", "data": args.data,
                  "batch_size": args.batch_size, "epochs": args.epochs},
        worker={"count": args.workers})
    # ImageFolder's classes: one directory each; MixUp's soft labels are
    # that wide (the stage processes read it from the environment).
    classes = sum(1 for e in os.scandir(args.data) if e.is_dir())
    os.environ["RECIPE_NUM_CLASSES"] = str(classes)
    with loader:
        model = torchvision.models.resnet18(num_classes=classes)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1,
                                    momentum=0.9, weight_decay=1e-4)
        loss_fn = nn.CrossEntropyLoss(label_smoothing=0.1)
        step, started = 0, time.perf_counter()
        for epoch in range(loader.epochs):
            model.train()
            for images, labels in loader:
                loss = loss_fn(model(images), labels)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                step += 1
                if step % 10 == 0 or step == args.steps:
                    rate = step * args.batch_size / (time.perf_counter()
                                                     - started)
                    print(f"epoch {epoch} step {step} loss {loss.item():.3f}"
                          f" ({rate:.1f} images/s)", flush=True)
                if step == args.steps:
                    break
            if step == args.steps:
                break
    report = loader.report
    stages = ", ".join(f"{s['stage']} {s['ms_per_sample']:.2f} ms"
                       for s in report["stages"])
    print(f"{step} steps; stages per sample: {stages}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
