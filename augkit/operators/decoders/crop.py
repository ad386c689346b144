"""The decoders that crop: ``fn.decoders.image_crop`` (a fixed window, ``fn.crop``'s
arguments), ``fn.decoders.image_random_crop`` (a random window, ``fn.random_resized_crop``'s
generator) and ``fn.decoders.image_slice`` (``fn.slice``'s window), as DALI's fused
decoder-and-crop operators.

Decode only the window? Neither installed codec can: simplejpeg (libjpeg-turbo) exposes only
DCT-domain scaling (``min_height``/``min_width``), not libjpeg-turbo's
``jpeg_crop_scanline``/``jpeg_skip_scanlines``, and Pillow has ``draft`` (scaling) but no ROI
decode. So every image is decoded whole (``decoders.image``'s back ends: simplejpeg for JPEGs
where installed, Pillow otherwise), then the window is cut from it: one copy of the window.
The result is DALI's exactly: DALI 2.4's CPU ``image_crop``/``image_slice`` outputs equal its
full decode cut at the window (measured on the test JPEGs), and augkit's full decode equals
DALI's bit for bit on them (tests/dali_parity/cases_crops.py).

Rules (DALI 2.4, checked against its outputs):

- The window is computed on the decoded image: after ``adjust_orientation`` (EXIF) and in the
  output colour space's shape (H, W, C).
- ``image_crop``: ``crop``/``crop_h``/``crop_w`` and ``crop_pos_x``/``crop_pos_y`` with
  ``rounding``, as ``fn.crop`` (``geometric/crop.py``); ``image_slice``: ``fn.slice``'s named
  arguments or ``anchor``/``shape`` inputs (``geometric/slice.py``); ``image_random_crop``:
  ``random_area``, ``random_aspect_ratio``, ``num_attempts`` (``geometric/crop_window.py``),
  drawn from the sample's stream.
- A window leaving the image raises (DALI has no ``out_of_bounds_policy`` on these decoders).
- The decoder's own arguments are ``decoders.image``'s, except ``dct_downscale_hint`` (a
  scaled decode would move the window) and ``on_error`` (a skipped sample would need the
  reader to re-draw a window; use ``decoders.image`` then ``fn.crop``/``fn.slice`` for that).

``device="mixed"``: the batch is decoded as ``decoders.image(device="mixed")`` decodes it
(JPEGs whole on the GPU with torchvision's nvJPEG, the rest on the CPU; ``nvjpeg.py``), and the
window is cut by slicing the CuPy array (one copy on the GPU); an image the CPU decoded is cut
there and only its window is copied to the GPU. The windows are the CPU path's (they depend on
the image's shape and the sample's stream only), the pixels nvJPEG's.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from augkit import backend, kinds
from augkit.errors import AugkitError
from augkit.operators.base import RunContext
from augkit.operators.decoders.image import ImageDecoder, decode_image
from augkit.operators.geometric.crop import CROP_ARGS, crop_request, crop_window
from augkit.operators.geometric.crop_window import random_crop_window, window_args
from augkit.operators.geometric.slice import (
    AXES_ARGS,
    WINDOW_ARGS,
    _check_named,
    named_window,
    positional_window,
    slice_axes,
    take_window,
)
from augkit.operators.registry import (
    REGISTRY,
    Arg,
    InputSpec,
    OperatorSchema,
    OutputSpec,
    fixed_kinds,
    register,
    to_bool,
)
from augkit.tensors import TensorList

_NOT_HERE = ("dct_downscale_hint", "on_error")
_DECODER_ARGS = tuple(a for a in REGISTRY["decoders.image"].args if a.name not in _NOT_HERE)
_ENCODED = InputSpec(
    "encoded bytes (1-D uint8 samples, as fn.readers.file gives them)",
    kinds=("encoded",),
    ndims=(1,),
    hints={
        "image": "they are decoded already: use fn.crop / fn.slice on decoded images",
        "labels": "labels are not files: decode the reader's first output "
        "(jpegs, labels = fn.readers.file(...))",
    },
)
_OUTPUT = fixed_kinds(OutputSpec(kind=kinds.IMAGE, ndim=3, layout="HWC", what="decoded HWC images"))


def _cut(image: Any, anchor: Sequence[int], size: Sequence[int], name: str) -> Any:
    """The window of ``image`` (NumPy or CuPy), contiguous."""
    xp = backend.array_module(image)
    try:
        return xp.ascontiguousarray(take_window(image, anchor, size, "error", lambda r: r))
    except ValueError:
        raise ValueError(
            f"{name}: the window (anchor {tuple(anchor)}, shape {tuple(size)}, layout HWC) "
            f"does not fit in the decoded image of shape {image.shape}; give a smaller window "
            f"(these decoders have no out_of_bounds_policy: decode with decoders.image, then "
            f"use fn.crop or fn.slice with out_of_bounds_policy='pad')"
        ) from None


class _CropDecoder(ImageDecoder):
    """Decodes whole, then cuts ``window(image, args)``."""

    moves_geometry = True
    """It moves pixels: the decoded image is a window of the encoded one
    (``OperatorImpl.moves_geometry``)."""

    op_name = ""

    def screens(self) -> bool:
        return False

    def chainable(self) -> bool:
        return self.device == "cpu"

    def check_input(self, index: int, sample: Any, layout: str) -> None:
        if index == 0:
            super().check_input(index, sample, layout)

    def window(self, image: np.ndarray, *extra: Any, **args: Any) -> tuple[list[int], list[int]]:
        raise NotImplementedError

    def cpu_decoder(self) -> Any:
        args = self.args
        return lambda data: decode_image(
            data, args["output_type"], args["adjust_orientation"], None, args.get("max_pixels")
        )

    def mixed_batch(
        self, ctx: RunContext, inputs: Sequence[TensorList], arg_inputs: dict[str, TensorList]
    ) -> list[TensorList] | None:
        """The batch decoded at once (``ImageDecoder.decode_mixed``), then each sample's window
        cut where its image is (GPU or CPU) and placed on the GPU; errors name the first
        sample that fails, at whichever step, as the per-sample kernels do."""
        n = len(inputs[0]) if inputs else 0
        if not n:
            return None
        images = self.decode_mixed(ctx, inputs[0])
        streams = ctx.streams(self.stream_key, n) if self.random else None
        results = []
        for i, image in enumerate(images):
            if isinstance(image, BaseException):
                raise self.fail(f"{type(image).__name__}: {image}", i, inputs) from image
            args = self.sample_args(arg_inputs, i)
            if streams is not None:
                args = {**args, "rng": streams.generator(i)}
            extra = [x.samples[i] for x in inputs[1:]]
            try:
                anchor, size = self.window(image, *extra, **args)
                out = _cut(image, anchor, size, self.op_name)
            except AugkitError:
                raise
            except Exception as exc:
                raise self.fail(f"{type(exc).__name__}: {exc}", i, inputs) from exc
            results.append((self.place(out),))
        return self.outputs_of(results, list(inputs))

    def mixed(self, data: np.ndarray, *extra: np.ndarray, **args: Any) -> Any:
        """One sample of the "mixed" device (what ``mixed_batch`` does for a batch)."""
        image = super().mixed(data, **args)
        anchor, size = self.window(image, *extra, **args)
        return _cut(image, anchor, size, self.op_name)

    def cpu(
        self,
        data: np.ndarray,
        *extra: np.ndarray,
        output_type: Any,
        adjust_orientation: bool,
        max_pixels: int | None = None,
        **args: Any,
    ) -> np.ndarray:
        image = decode_image(data, output_type, adjust_orientation, None, max_pixels)
        anchor, size = self.window(image, *extra, **args)
        return _cut(image, anchor, size, self.op_name)


class ImageCropDecoder(_CropDecoder):
    op_name = "decoders.image_crop"

    def window(self, image: np.ndarray, **args: Any) -> tuple[Any, Any]:
        return crop_window(image.shape, "HWC", crop_request(args), args["rounding"])


class ImageRandomCropDecoder(_CropDecoder):
    op_name = "decoders.image_random_crop"
    random = True

    def window(self, image: np.ndarray, *, rng: np.random.Generator, **args: Any) -> Any:
        y, x, h, w = random_crop_window(
            image.shape[0],
            image.shape[1],
            rng,
            aspect_ratio=args["random_aspect_ratio"],
            area=args["random_area"],
            num_attempts=args["num_attempts"],
        )
        return [y, x, 0], [h, w, image.shape[2]]


class ImageSliceDecoder(_CropDecoder):
    op_name = "decoders.image_slice"

    def window(self, image: np.ndarray, *inputs: np.ndarray, **args: Any) -> Any:
        named = [
            k
            for k in ("start", "rel_start", "end", "rel_end", "shape", "rel_shape")
            if args.get(k) is not None
        ]
        if len(inputs) == 1:
            raise ValueError(
                "decoders.image_slice takes the window as named arguments or as two inputs "
                "(anchor, shape); got one input besides the data"
            )
        if inputs and named:
            raise ValueError(
                f"the named arguments {named} cannot be used with the anchor and shape inputs"
            )
        if not inputs and not named:
            raise ValueError(
                "no slice window: give start/rel_start with end/rel_end/shape/rel_shape, or the "
                "anchor and shape inputs"
            )
        _check_named(args)
        axes = slice_axes(3, "HWC", args.get("axes"), args.get("axis_names"))
        if inputs:
            return positional_window(
                image.shape,
                axes,
                inputs[0],
                inputs[1],
                args["normalized_anchor"],
                args["normalized_shape"],
            )
        return named_window(image.shape, axes, args)


_DOC_TAIL = (
    " The image is decoded whole (no installed codec decodes a window alone) and the window "
    "cut from it, which gives DALI's pixels exactly; a window leaving the image raises. The "
    "other arguments are fn.decoders.image's."
)

register(
    OperatorSchema(
        name="decoders.image_crop",
        class_name="decoders.ImageCrop",
        impl=ImageCropDecoder,
        devices=("cpu", "mixed"),
        aliases=("ImageDecoderCrop",),
        fn_aliases=("image_decoder_crop",),
        accepts=[_ENCODED],
        output_kinds=_OUTPUT,
        doc=(
            "Decodes images and crops them to a window of ``crop`` = (H, W) (or "
            "``crop_h``/``crop_w``) at the normalized position ``crop_pos_x``/``crop_pos_y``, "
            "with fn.crop's rules (sizes truncated, the anchor rounded per ``rounding``)."
            + _DOC_TAIL
        ),
        args=[
            *_DECODER_ARGS,
            *(a for a in CROP_ARGS if a.name not in ("out_of_bounds_policy", "fill_values")),
        ],
    )
)

register(
    OperatorSchema(
        name="decoders.image_random_crop",
        class_name="decoders.ImageRandomCrop",
        impl=ImageRandomCropDecoder,
        devices=("cpu", "mixed"),
        aliases=("ImageDecoderRandomCrop",),
        fn_aliases=("image_decoder_random_crop",),
        accepts=[_ENCODED],
        output_kinds=_OUTPUT,
        doc=(
            "Decodes images and crops each to a random window: its area a fraction "
            "``random_area`` of the image's, its aspect ratio drawn log-uniformly from "
            "``random_aspect_ratio``, up to ``num_attempts`` tries before DALI's fall-back "
            "(the window generator of fn.random_resized_crop), drawn from the sample's stream."
            + _DOC_TAIL
        ),
        args=[
            *_DECODER_ARGS,
            *window_args(),
        ],
    )
)

register(
    OperatorSchema(
        name="decoders.image_slice",
        class_name="decoders.ImageSlice",
        impl=ImageSliceDecoder,
        devices=("cpu", "mixed"),
        aliases=("ImageDecoderSlice",),
        fn_aliases=("image_decoder_slice",),
        min_inputs=1,
        max_inputs=3,
        accepts=[_ENCODED, None, None],
        output_kinds=_OUTPUT,
        validate=_check_named,
        doc=(
            "Decodes images and cuts the window fn.slice would: named arguments "
            "(``start``/``rel_start`` with ``end``/``rel_end``/``shape``/``rel_shape``) or the "
            "inputs ``anchor`` and ``shape`` (fractions unless "
            "``normalized_anchor``/``normalized_shape`` are False; integers are absolute), over "
            "``axis_names`` (default 'WH') or ``axes``." + _DOC_TAIL
        ),
        args=[
            *_DECODER_ARGS,
            *WINDOW_ARGS,
            *AXES_ARGS,
            Arg("normalized_anchor", "a float anchor input is a fraction", True, to_bool),
            Arg("normalized_shape", "a float shape input is a fraction", True, to_bool),
        ],
    )
)
