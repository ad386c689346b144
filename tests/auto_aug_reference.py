"""DALI 2.4's ``auto_aug`` augmentations on a few fixed images, stored in
``tests/dali_parity/reference/auto_aug.npz`` and compared with ``augkit.auto_aug`` by
``tests/test_auto_aug_augmentations.py``.

Run with DALI's venv, from the repository root::

    env -u VIRTUAL_ENV -u PYTHONPATH benchmarks/_work/dali-venv/bin/python \\
        tests/auto_aug_reference.py

Inputs: four photos of ``data/images`` decoded and resized with Pillow (BILINEAR) to small
sizes, one of them not square (so that the shape-relative translations differ along x and y),
fed by ``fn.external_source`` with the per-sample magnitude bins and random signs (so the signs
are given, not drawn: sample ``i`` has sign ``SIGNS[i]``). Each augmentation runs on DALI's CPU
(``device_id=None``) at the bins ``BINS`` of ``NUM_BINS`` (the same bin for the whole batch,
given as a DataNode and combined with the signs by ``signed_bin``); the augmentations without a
magnitude run once.

Stored entries:

- ``input/<i>``: the images (uint8 HWC).
- ``out/<augmentation>/<bin>/<i>``: DALI's output for sample ``i`` (bin ``-`` for the
  augmentations without a magnitude).
- ``param/<augmentation>``: the parameter every signed bin maps to, ``(NUM_BINS, 2, *shape)``:
  ``[bin, sign]`` (sign 0: positive magnitude, 1: negated; the same for both where the
  augmentation is not randomly negated), computed by DALI's own ``Augmentation`` machinery in a
  pipeline (an augmentation with the same setup whose op returns its parameter).
- ``config``: JSON of each augmentation's ``name``, ``mag_range``, ``randomly_negate`` and
  ``param_device`` as DALI's decorator sets them.
- ``bins``, ``signs``, ``num_bins``.
"""

from __future__ import annotations

import json
import pathlib
import warnings

import numpy as np
from PIL import Image

ROOT = pathlib.Path(__file__).resolve().parents[1]
OUT = ROOT / "tests" / "dali_parity" / "reference" / "auto_aug.npz"
PHOTOS = (
    ("animals/chelsea_cat.jpg", (48, 48)),
    ("people/cameraman.jpg", (48, 48)),
    ("objects/coffee_cup.jpg", (40, 56)),
    ("medical/retina_fundus.jpg", (48, 48)),
)
SIGNS = (0, 1, 0, 1)
BINS = (0, 5, 10)
NUM_BINS = 11
WITH_MAGNITUDE = (
    "shear_x",
    "shear_y",
    "translate_x",
    "translate_y",
    "translate_x_no_shape",
    "translate_y_no_shape",
    "rotate",
    "brightness",
    "contrast",
    "color",
    "sharpness",
    "posterize",
    "solarize",
    "solarize_add",
)
WITHOUT_MAGNITUDE = ("equalize", "auto_contrast", "invert", "identity")


def load_images() -> list[np.ndarray]:
    images = []
    for name, (h, w) in PHOTOS:
        with Image.open(ROOT / "data" / "images" / name) as im:
            rgb = im.convert("RGB").resize((w, h), Image.BILINEAR)
        images.append(np.ascontiguousarray(np.asarray(rgb, dtype=np.uint8)))
    return images


def main() -> None:
    from nvidia.dali import fn, pipeline_def
    from nvidia.dali.auto_aug import augmentations as a
    from nvidia.dali.auto_aug.core import _Augmentation, signed_bin

    # DALI's own module calls its deprecated aliases (experimental.filter, fn.shapes...).
    warnings.filterwarnings("ignore", category=DeprecationWarning)
    images = load_images()
    batch = len(images)
    entries: dict[str, np.ndarray] = {}
    for i, image in enumerate(images):
        entries[f"input/{i}"] = image

    def run(aug, magnitude_bin, signs, images_in, shape_kw):
        @pipeline_def(batch_size=batch, num_threads=1, device_id=None, seed=0)
        def pipe():
            data = fn.external_source(source=lambda: images_in, batch=True, layout="HWC")
            kwargs = {"shape": fn.shapes(data)} if shape_kw else {}
            if magnitude_bin is None:
                return aug(data, **kwargs)
            bins = fn.external_source(
                source=lambda: [np.array(magnitude_bin, np.int32)] * batch, batch=True
            )
            sign = fn.external_source(
                source=lambda: [np.array(s, np.int32) for s in signs], batch=True
            )
            return aug(
                data,
                magnitude_bin=signed_bin(bins, random_sign=sign),
                num_magnitude_bins=NUM_BINS,
                **kwargs,
            )

        p = pipe()
        p.build()
        (out,) = p.run()
        return [np.array(out.at(i)) for i in range(batch)]

    config = {}
    for name in WITH_MAGNITUDE + WITHOUT_MAGNITUDE:
        aug = getattr(a, name)
        config[name] = {
            "name": aug.name,
            "mag_range": None if aug.mag_range is None else [float(x) for x in aug.mag_range],
            "randomly_negate": aug.randomly_negate,
            "param_device": aug.param_device,
        }
        needs_shape = name in ("translate_x", "translate_y")
        for magnitude_bin in BINS if name in WITH_MAGNITUDE else (None,):
            outs = run(aug, magnitude_bin, SIGNS, images, needs_shape)
            key = "-" if magnitude_bin is None else str(magnitude_bin)
            for i, out in enumerate(outs):
                entries[f"out/{name}/{key}/{i}"] = out
        if name not in WITH_MAGNITUDE:
            continue
        # The parameters: the same setup around an op that returns its parameter.
        probe = _Augmentation(
            lambda data, param: param,
            mag_range=aug.mag_range,
            randomly_negate=aug.randomly_negate,
            mag_to_param=aug._mag_to_param,
            param_device="cpu",
            name=name,
        )
        table = []
        for magnitude_bin in range(NUM_BINS):
            tiny = [np.zeros((2, 2, 3), np.uint8)] * 2
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                row = run(probe, magnitude_bin, (0, 1, 0, 1), tiny + tiny, False)
            table.append(np.stack(row[:2]))
        entries[f"param/{name}"] = np.stack(table)

    entries["config"] = np.array(json.dumps(config, sort_keys=True))
    entries["bins"] = np.array(BINS)
    entries["signs"] = np.array(SIGNS)
    entries["num_bins"] = np.array(NUM_BINS)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(OUT, **entries)
    print(f"wrote {OUT} ({OUT.stat().st_size / 1e6:.2f} MB, {len(entries)} entries)")


if __name__ == "__main__":
    main()
