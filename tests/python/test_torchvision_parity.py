"""Stoker's chain against torchvision's on real photos (python3-skimage's,
the PNGs saved as JPEGs so that the fused start, which decodes JPEGs
only, runs on every one): Resize(256) + CenterCrop(224) + ToTensor on PIL
images, the recipe's evaluation transforms, through stoker.DataLoader
over an image folder."""

import math
import os
import shutil

import pytest
import torch

import stoker

PHOTOS = "/usr/lib/python3/dist-packages/skimage/data"
NAMES = ["astronaut.png", "chelsea.png", "coffee.png", "color.png",
         "ihc.png", "motorcycle_left.png", "motorcycle_right.png",
         "hubble_deep_field.jpg", "retina.jpg", "rocket.jpg"]


def photo_folder(root, PIL):
    """An image folder (one class) of the photos as JPEGs (a PNG saved at
    quality 90), in sorted order: sample i is the i-th file."""
    folder = os.path.join(root, "photos", "a")
    os.makedirs(folder)
    files = []
    for name in NAMES:
        stem, ext = os.path.splitext(name)
        if ext == ".jpg":
            shutil.copy(os.path.join(PHOTOS, name), folder)
        else:
            with PIL.open(os.path.join(PHOTOS, name)) as img:
                img.convert("RGB").save(os.path.join(folder, stem + ".jpg"),
                                        quality=90)
        files.append(stem + ".jpg")
    return os.path.join(root, "photos"), sorted(files)


def stoker_images(data, transforms, decode_region):
    loader = stoker.DataLoader(
        pipeline={"source": "image-folder", "data": data,
                  "transforms": transforms, "decode_region": decode_region,
                  "height": 224, "width": 224, "batch_size": 1,
                  "epochs": 1, "shuffle": False},
        worker={"count": 1})
    out = {}
    for images, _ in loader:
        out[loader.last_batch.sample_ids[0]] = images[0].clone()
    loader.close()
    return out


def psnr(a, b):
    mse = float(((a - b) ** 2).mean())
    return math.inf if mse == 0 else 10 * math.log10(255.0 ** 2 / mse)


@pytest.mark.parametrize("decode_region", [False, True])
def test_resize_and_center_crop_give_torchvisions_pixels(tmp_path,
                                                         decode_region):
    PIL = pytest.importorskip("PIL.Image")
    T = pytest.importorskip("torchvision.transforms")
    data, files = photo_folder(str(tmp_path), PIL)
    got = stoker_images(data, ["decode", "resize(256)", "center-crop(224)",
                               "to-tensor"], decode_region)
    assert sorted(got) == list(range(len(files)))
    recipe = T.Compose([T.Resize(256), T.CenterCrop(224), T.ToTensor()])
    short = []
    for i, name in enumerate(files):
        with PIL.open(os.path.join(data, "a", name)) as img:
            want = recipe(img.convert("RGB"))
        a = (got[i] * 255).round()
        b = (want * 255).round()
        assert a.shape == b.shape, name
        within = float(((a - b).abs() <= 1).float().mean())
        print(f"{name}: {psnr(a, b):.1f} dB, {within:.5f} within 1 level")
        if psnr(a, b) < 45 or within < 0.999:
            short.append(f"{name}: {psnr(a, b):.1f} dB, {within:.5f}")
    assert not short, short
