"""torchvision's reference classification recipe
(references/classification/presets.py, ClassificationPresetTrain) as the
Python stages of a Stoker chain: the objects a stage process imports by
name, so they live at the top of a module, not in __main__.

Stoker runs decode, RandomResizedCrop and the flip in C++ (one pass over
the JPEG's needed rows and columns), hands each sample to these in a
worker's stage process as a uint8 CHW tensor (TrivialAugmentWide) or a
float32 one after to-tensor and normalize (RandomErasing), with torch's
generator seeded per sample: the same draws on any worker.
"""

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


def train_transforms(crop: int = 224) -> list:
    """The recipe's train chain for stoker.DataLoader(transforms=...)."""
    norm = ", ".join(str(v) for v in MEAN + STD)
    return ["decode", f"random-resized-crop({crop})", "horizontal-flip",
            trivial_wide, "to-tensor", f"normalize({norm})", random_erasing]


def eval_transforms(crop: int = 224, resize: int = 256) -> list:
    """The recipe's evaluation chain (ClassificationPresetEval)."""
    norm = ", ".join(str(v) for v in MEAN + STD)
    return ["decode", f"resize({resize})", f"center-crop({crop})",
            "to-tensor", f"normalize({norm})"]
