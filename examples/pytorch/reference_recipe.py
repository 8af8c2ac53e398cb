"""torchvision's reference classification recipe
(references/classification/presets.py, ClassificationPresetTrain) as the
Python stages of a Stoker chain: the objects a stage process imports by
name, so they live at the top of a module, not in __main__.

Stoker runs decode, RandomResizedCrop and the flip in C++ (one pass over
the JPEG's needed rows and columns), hands each sample to these in a
worker's stage process as a PIL image (TrivialAugmentWide, python-pil) or
a float32 CHW tensor after to-tensor and normalize (RandomErasing), with
torch's generator seeded per sample: the same draws on any worker; then
the whole batch to MixUp or CutMix (mixup_cutmix), which makes soft
labels.
"""

import math
import os

import torch
from torchvision import transforms as T

# One intra-op thread per stage process: Stoker runs one process per
# worker thread, already one per core.
torch.set_num_threads(1)

MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)

trivial_wide = T.TrivialAugmentWide(
    interpolation=T.InterpolationMode.BILINEAR)
random_erasing = T.RandomErasing(p=0.25)


def mixup_cutmix(images: torch.Tensor, labels: torch.Tensor):
    """The recipe's --mixup-alpha 0.2 --cutmix-alpha 1.0 on a whole batch
    (its transforms.v2.MixUp / CutMix in RandomChoice, torchvision 0.16's;
    Debian has 0.14): one of the two, drawn per batch; soft labels over
    RECIPE_NUM_CLASSES classes (the script sets it: a stage process
    inherits the loader's environment)."""
    classes = int(os.environ["RECIPE_NUM_CLASSES"])
    soft = torch.nn.functional.one_hot(labels, classes).float()
    other = images.roll(1, 0)
    if torch.rand(1).item() < 0.5:  # MixUp
        lam = float(torch.distributions.Beta(0.2, 0.2).sample())
        mixed = other.mul_(1 - lam).add_(images, alpha=lam)
    else:  # CutMix: a box of the neighbour's image pasted in
        lam = float(torch.distributions.Beta(1.0, 1.0).sample())
        h, w = images.shape[-2:]
        cy, cx = int(torch.randint(h, (1,))), int(torch.randint(w, (1,)))
        rh, rw = int(h * math.sqrt(1 - lam)), int(w * math.sqrt(1 - lam))
        y1, y2 = max(cy - rh // 2, 0), min(cy + rh // 2, h)
        x1, x2 = max(cx - rw // 2, 0), min(cx + rw // 2, w)
        mixed = images.clone()
        mixed[:, :, y1:y2, x1:x2] = other[:, :, y1:y2, x1:x2]
        lam = 1.0 - (y2 - y1) * (x2 - x1) / (h * w)
    return mixed, soft.roll(1, 0).mul_(1 - lam).add_(soft, alpha=lam)


def train_transforms(crop: int = 224) -> list:
    """The recipe's train chain for stoker.DataLoader(transforms=...)."""
    norm = ", ".join(str(v) for v in MEAN + STD)
    # TrivialAugmentWide on a PIL image (python-pil), as the recipe's PIL
    # backend runs it: 2-3x faster than on a tensor.
    return ["decode", f"random-resized-crop({crop})", "horizontal-flip",
            "python-pil(reference_recipe:trivial_wide)", "to-tensor",
            f"normalize({norm})", random_erasing,
            "python-batch(reference_recipe:mixup_cutmix)"]


def eval_transforms(crop: int = 224, resize: int = 256) -> list:
    """The recipe's evaluation chain (ClassificationPresetEval)."""
    norm = ", ".join(str(v) for v in MEAN + STD)
    return ["decode", f"resize({resize})", f"center-crop({crop})",
            "to-tensor", f"normalize({norm})"]
