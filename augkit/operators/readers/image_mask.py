"""``fn.readers.image_mask`` / ``ops.readers.ImageMask`` (augkit only): images and their
segmentation masks, read as pairs, so that shuffling, sharding and epochs can never split one.

DALI's idiom for segmentation is two ``readers.file`` (images, masks) with the same ``seed``:
they stay paired only while both list the same files in the same order and walk them with the
same arguments (``readers/pairing.py`` warns where they may not). Here one reader reads both,
so a sample is always one image and its own mask.

Pairs (checked when the pipeline is built):

- The images are every file under ``file_root``, recursively, whose name matches
  ``file_filters`` (image extensions by default), in sorted order of their relative paths
  ("/"-separated), or the ``files`` given (paths relative to ``file_root``), in that order.
- The mask of "animals/chelsea_cat.jpg" is ``mask_root/animals/chelsea_cat`` +
  ``mask_extension`` (".png" by default): matched by the relative path without its extension.
- ``mask_root`` may be ``file_root`` itself (masks beside their images: "cat.jpg", "cat.png")
  or a folder inside it: files under ``mask_root`` that end with ``mask_extension`` are masks,
  never images.
- ``missing="error"`` (default): an image without a mask, or (when listing folders) a mask
  without an image, is an ``ArgumentError`` naming the first few such files and their count.
  With ``files`` the list is a selection: other masks under ``mask_root`` are not looked at
  (one stat per listed image, no walk of ``mask_root``), and the paths must be relative.
  ``missing="skip"``: such images are left out, and masks without images are ignored (the
  error still comes when no pair is left).
- Two images with one stem ("a.jpg" and "a.jpeg") would share a mask: an ``ArgumentError``.

Outputs: the image's bytes and the mask's bytes (uint8, 1-D, kind ``encoded``), to decode with
``fn.decoders.image`` and ``fn.decoders.mask``. ``source_info``: the image's relative path.
Every reader argument (``random_shuffle``, ``shard_id``/``num_shards``, ``stick_to_shard``,
``pad_last_batch``, ``shuffle_after_epoch``, ...) works as in ``readers.file``, on pairs.

A file that cannot be read when its batch comes raises ``OperatorError`` naming the image and,
when the mask is the one that failed, the mask.

Example:
    >>> from augkit import fn, pipeline_def
    >>> @pipeline_def(batch_size=4, num_threads=2, device_id=None, seed=1)
    ... def segmentation(images_root, masks_root):
    ...     images, masks = fn.readers.image_mask(
    ...         file_root=images_root, mask_root=masks_root, random_shuffle=True
    ...     )
    ...     return fn.decoders.image(images), fn.decoders.mask(masks)
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from augkit import kinds
from augkit.operators.base import finish
from augkit.operators.readers.base import READER_ARGS, Reader, listed
from augkit.operators.readers.file import IMAGE_FILE_FILTERS, _matcher, _path, _paths, _patterns
from augkit.operators.registry import (
    REQUIRED,
    Arg,
    OperatorSchema,
    OutputSpec,
    described,
    fixed_kinds,
    one_of,
    register,
    to_bool,
)

IMAGE_FILTERS = IMAGE_FILE_FILTERS  # readers.file's image formats
SHOWN = 5  # how many unpaired files an error names

IMAGE_BYTES = OutputSpec(
    kind=kinds.ENCODED,
    ndim=1,
    layout="",
    what="1-D encoded image bytes from readers.image_mask",
    hint="decode them first with fn.decoders.image",
)
MASK_BYTES = OutputSpec(
    kind=kinds.ENCODED,
    ndim=1,
    layout="",
    what="1-D encoded mask bytes from readers.image_mask",
    hint="decode them first with fn.decoders.mask (it keeps the class indices)",
)


@described("a file extension such as '.png'")
def _extension(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError(f"expected a file extension such as '.png', got {value!r}")
    if not value.startswith(".") or len(value) < 2 or "/" in value or os.sep in value:
        raise ValueError(f"expected a file extension such as '.png', got {value!r}")
    return value


def _walk(root: str) -> list[str]:
    """Every file under ``root`` (regular files and links; linked folders once each), as sorted
    "/"-separated relative paths."""
    found = []
    seen = set()
    for folder, dirs, names in os.walk(root, followlinks=True):
        # Linked folders are followed, once each: a link to a parent would loop for ever.
        seen.add(os.path.realpath(folder))
        dirs[:] = sorted(d for d in dirs if os.path.realpath(os.path.join(folder, d)) not in seen)
        rel = os.path.relpath(folder, root)
        prefix = "" if rel == "." else rel.replace(os.sep, "/") + "/"
        found += [prefix + n for n in names if os.path.isfile(os.path.join(folder, n))]
    return sorted(found)


def _stem(rel: str) -> str:
    """The relative path without its extension: "animals/cat.jpg" -> "animals/cat"."""
    folder, _, name = rel.rpartition("/")
    base = name.rsplit(".", 1)[0] if "." in name.lstrip(".") else name
    return f"{folder}/{base}" if folder else base


def _listed(names: list[str], count: int | None = None) -> str:
    return listed(names, count, SHOWN)


class ImageMaskReader(Reader):
    """Images and their masks as pairs; see the module docstring."""

    def open(self) -> list[str]:
        a = self.args
        root, mask_root = a["file_root"], a["mask_root"]
        for arg, folder in (("file_root", root), ("mask_root", mask_root)):
            if not os.path.isdir(folder):
                raise self.error(f"{arg} {folder!r} does not exist or is not a folder")
        self._root = os.path.abspath(root)
        self._mask_root = os.path.abspath(mask_root)
        ext = a["mask_extension"]
        sensitive = a["case_sensitive_filter"]
        is_mask_name = (
            (lambda n: n.endswith(ext))
            if sensitive
            else (lambda n: n.lower().endswith(ext.lower()))
        )
        images = self._images(is_mask_name)
        listing = a["files"] is None
        # The masks by stem: every file under mask_root with the extension when listing, the
        # masks of the files given (one stat each) otherwise.
        masks: dict[str, str] = {}
        if listing:
            for rel in _walk(self._mask_root):
                if is_mask_name(rel):
                    masks.setdefault(rel[: -len(ext)], rel)
        else:
            for rel in images:
                mask = _stem(rel) + ext
                if os.path.isfile(os.path.join(self._mask_root, *mask.split("/"))):
                    masks[_stem(rel)] = mask
        by_stem: dict[str, str] = {}
        for rel in images:
            other = by_stem.setdefault(_stem(rel), rel)
            if other != rel:
                raise self.error(
                    f"the images {other!r} and {rel!r} have the same path without extension, so "
                    f"they would share the mask {_stem(rel) + ext!r}; keep one of them (or list "
                    f"the ones to read with files=[...])"
                )
        lonely = [rel for rel in images if _stem(rel) not in masks]
        orphans = [m for s, m in masks.items() if s not in by_stem] if listing else []
        if (lonely or orphans) and a["missing"] == "error":
            raise self.error(self._unpaired(lonely, orphans, len(images)))
        pairs = [(rel, masks[_stem(rel)]) for rel in images if _stem(rel) in masks]
        if not pairs:
            raise self.error(
                f"no image under file_root {root!r} has a mask under mask_root {mask_root!r} "
                f"({len(images)} image(s), {len(masks)} mask(s) ending with {ext!r}); a mask "
                f"has its image's relative path with the extension {ext!r}"
            )
        self._paths = [os.path.join(self._root, *rel.split("/")) for rel, _ in pairs]
        self._mask_paths = [os.path.join(self._mask_root, *m.split("/")) for _, m in pairs]
        self._mask_names = [m for _, m in pairs]
        return [rel for rel, _ in pairs]

    def _images(self, is_mask_name: Any) -> list[str]:
        a = self.args
        if a["files"] is not None:
            if not a["files"]:
                raise self.error("'files' is an empty list")
            absolute = [f for f in a["files"] if os.path.isabs(f)]
            if absolute:
                raise self.error(
                    f"'files' are paths relative to file_root, got absolute ones: "
                    f"{_listed(absolute)}"
                )
            images = [os.path.normpath(f).replace(os.sep, "/") for f in a["files"]]
            absent = [f for f in images if not os.path.isfile(os.path.join(self._root, f))]
            if absent:
                raise self.error(
                    f"{len(absent)} of the {len(images)} files in 'files' do not exist under "
                    f"file_root {a['file_root']!r}: {_listed(absent)}"
                )
            return images
        keep = _matcher(a["file_filters"], a["case_sensitive_filter"])
        inside = os.path.relpath(self._mask_root, self._root).replace(os.sep, "/")
        within = inside == "." or not (inside == ".." or inside.startswith("../"))
        prefix = "" if inside == "." else inside + "/"

        def is_image(rel: str) -> bool:
            if not keep(rel.rsplit("/", 1)[-1]):
                return False
            # A mask lying under file_root (mask_root is file_root or inside it) is no image.
            return not (within and rel.startswith(prefix) and is_mask_name(rel))

        images = [rel for rel in _walk(self._root) if is_image(rel)]
        if not images:
            raise self.error(
                f"no images found under file_root {a['file_root']!r} (recursively) matching "
                f"{list(a['file_filters'])}"
            )
        return images

    def _unpaired(self, lonely: list[str], orphans: list[str], total: int) -> str:
        ext = self.args["mask_extension"]
        parts = []
        if lonely:
            parts.append(
                f"{len(lonely)} of the {total} images have no mask (looked for "
                f"mask_root/<image path without extension>{ext}): {_listed(lonely)}"
            )
        if orphans:
            parts.append(f"{len(orphans)} masks have no image: {_listed(orphans)}")
        return (
            "; ".join(parts)
            + ". Add the missing files, or pass missing='skip' to leave unpaired images out"
        )

    def load(self, index: int) -> tuple[np.ndarray, np.ndarray]:
        image = np.fromfile(self._paths[index], dtype=np.uint8)
        try:
            mask = np.fromfile(self._mask_paths[index], dtype=np.uint8)
        except OSError as exc:
            reason = exc.strerror or str(exc)
            raise OSError(
                exc.errno, f"its mask '{self._mask_paths[index]}' cannot be read: {reason}"
            ) from exc
        return finish(image), finish(mask)

    def path_of(self, index: int) -> str:
        return self._paths[index]


register(
    OperatorSchema(
        name="readers.image_mask",
        class_name="readers.ImageMask",
        impl=ImageMaskReader,
        min_inputs=0,
        max_inputs=0,
        num_outputs=2,
        output_kinds=fixed_kinds(IMAGE_BYTES, MASK_BYTES),
        role="reader",
        doc=(
            "augkit only: reads images and their segmentation masks as pairs, so that "
            "shuffling, sharding and epochs never split one: the images under ``file_root`` "
            "(recursively, matching ``file_filters``; or ``files``), each with the mask of the "
            "same relative path without extension under ``mask_root`` (extension "
            "``mask_extension``, '.png' by default). Returns the image's and the mask's bytes "
            "(uint8, 1-D), to decode with fn.decoders.image and fn.decoders.mask; "
            "``source_info`` is the image's relative path. An image without a mask (or a mask "
            "without an image) is an error at build unless ``missing='skip'``."
        ),
        args=[
            Arg("file_root", "folder of the images (searched recursively)", REQUIRED, _path),
            Arg(
                "mask_root",
                "folder of the masks, laid out as file_root (may be file_root itself)",
                REQUIRED,
                _path,
            ),
            Arg(
                "files",
                "image paths relative to file_root (None: every image under it)",
                None,
                _paths,
            ),
            Arg("mask_extension", "the masks' file extension", ".png", _extension),
            Arg(
                "file_filters",
                "glob patterns of the image file names under file_root",
                IMAGE_FILTERS,
                _patterns,
            ),
            Arg(
                "case_sensitive_filter",
                "match file_filters and mask_extension case-sensitively",
                False,
                to_bool,
            ),
            Arg(
                "missing",
                "an image without a mask or a mask without an image: 'error' (at build) or "
                "'skip' (leave such images out)",
                "error",
                one_of("error", "skip"),
            ),
            *READER_ARGS,
        ],
    )
)
