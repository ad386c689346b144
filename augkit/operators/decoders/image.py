"""``fn.decoders.image`` / ``ops.decoders.Image`` (legacy ``ops.ImageDecoder``): encoded image
bytes (what ``fn.readers.file`` gives) to uint8 HWC images, as DALI's image decoder.

Back ends (details, numbers and traps in ``decoders/jpeg.py``):

- **JPEG fast path** (simplejpeg, i.e. libjpeg-turbo, where installed: ``augkit[jpeg]``): 8-bit
  baseline/progressive JPEGs with 1 or 3 components, every output type, the EXIF orientation
  read from the file's APP1 segment. 1.2 ms per photo against 1.6-2.0 ms for the Pillow path
  (``Image.open``, ``load`` and the copy into NumPy), RGB bit-identical to Pillow's decode.
- **Pillow** for everything else: PNG, BMP, TIFF, WebP, GIF and every other format Pillow reads,
  CMYK/YCCK and 12-bit JPEGs, JPEGs with an XMP orientation or unreadable EXIF, every file the
  fast path rejects (so a corrupt file raises Pillow's clear message, below), and all JPEGs when
  simplejpeg is absent (the core needs NumPy and Pillow only) or ``AUGKIT_JPEG_BACKEND=pillow``.

Rules, where DALI's decoders (libjpeg-turbo, nvJPEG, libtiff...) leave a choice:

- ``output_type``: ``types.RGB`` (default) and ``types.BGR`` give 3 channels; ``types.GRAY``
  gives (H, W, 1): for a JPEG on the fast path, libjpeg's own luma plane (what DALI's
  libjpeg-turbo gives; a mean 0.004 levels from Pillow's, up to 20 at saturated colours where
  Pillow clips RGB first); otherwise Pillow's ``convert("L")`` of the RGB image (ITU-R 601 luma).
  ``types.ANY_DATA`` keeps the file's channels: 1 for grey images, 2 for grey with alpha, 4 for
  RGBA (and palette images with transparency), 3 otherwise (CMYK is converted to RGB).
- Alpha is dropped for RGB/BGR/GRAY (as DALI does), without blending.
- 16-bit images are scaled to 8 bits, ``round(v * 255 / 65535)`` for grey ones; for 16-bit
  colour PNGs Pillow itself keeps the high byte (``v >> 8``), which differs from DALI's scaling
  by at most 1.
- ``adjust_orientation=True`` (default, as DALI) applies the EXIF orientation tag as
  ``PIL.ImageOps.exif_transpose`` does (JPEG, and PNG, TIFF or WebP that carry EXIF).
- JPEG chroma upsampling and IDCT are libjpeg's defaults in both back ends (fancy upsampling,
  accurate integer IDCT); ``jpeg_fancy_upsampling`` and ``use_fast_idct`` are accepted and have no
  effect, so a JPEG can differ from DALI's CPU decode by a few levels at colour edges.
- ``dct_downscale_hint=(H, W)`` (augkit only, off by default): the size of the resize that
  follows; a JPEG may then be decoded at 1/2, 1/4 or 1/8 of its size in the DCT domain (simplejpeg's
  ``min_height``/``min_width``, or Pillow's ``draft``), never below the hint. Decode + resize to
  300×300 gets ~20% faster (1.28 against 1.61 ms), but the result is blurrier: a mean 0.50
  levels from the full decode + resize over the benchmark photos, about 1.0 on the half of them
  that it reduces (and more for small targets: 1.3 at 150×150). That is over the 0.5 accuracy
  bar of the default path, hence opt-in.

``device="mixed"`` decodes JPEGs on the GPU (``decoders/nvjpeg.py``: torchvision's batched
nvJPEG decoder, one call per batch, the output an HWC CuPy array per sample handed over through
DLPack without a copy) and everything else on the CPU, per sample, then copies it to the GPU:
PNG, BMP, TIFF, WebP..., CMYK/12-bit JPEGs, JPEGs with an orientation only Pillow reads, and
any file nvJPEG refuses (a failed batch is retried file by file, so one bad file does not send
the batch to the CPU). The output types, the EXIF orientation, ``max_pixels`` and the errors
(``on_error``) are the CPU path's; nvJPEG's pixels differ from libjpeg's by its IDCT and chroma
upsampling (torchvision's own bar: a mean of under 2 levels). It needs CuPy, a CUDA device and
a CUDA build of torchvision (without torchvision every file takes the CPU route).

Bad files (the whole table, with DALI's behaviour beside it, is in ``docs/errors.md``):

- ``on_error="raise"`` (default): a file that cannot be decoded (empty, not an image, truncated,
  header only, over ``max_pixels``) raises ``OperatorError`` naming the sample, its file and the
  reason in plain words; the pipeline stays usable and the next ``run()`` gives the next batch.
- ``on_error="skip"`` (augkit only; DALI has no such option: its decoder cannot ask the reader
  for another sample, NVIDIA/DALI#3913): the reader decodes each sample as it reads it
  (``Reader.attach_screen``, in the pipeline's read stage, on the same threads), leaves the bad
  ones out and reads on until the batch is full, so batches stay full and labels stay with
  their images. Files that cannot even be read are skipped the same way. Every skip is a
  ``SkippedSampleWarning`` at the ``run()`` that delivers the batch and a record in
  ``Pipeline.skipped`` (file, reason, iteration). The batches are the same in synchronous,
  prefetching and debug mode (in debug mode the reader refills its batch when the decoder
  runs). The input must come straight from a reader (else an error at build); in eager calls
  bad samples are left out of the returned list, with the warning. ``pad_last_batch`` pads
  with the last good sample; ``last_batch_policy="partial"`` epochs may end shorter. A data
  set in which more samples in a row fail than it has files stops with an error.
- ``max_pixels`` (default 178,956,970, Pillow's own limit): an image whose header claims more
  pixels is refused before any pixel is decoded (decompression bombs: a few KB of PNG can
  claim gigabytes); JPEG and PNG sizes are read from their headers, other formats from
  Pillow's lazy open.

Example:
    >>> from augkit import fn, pipeline_def, types
    >>> @pipeline_def(batch_size=4, num_threads=2, device_id=None)
    ... def images():
    ...     jpegs, labels = fn.readers.file(file_root="data/images")
    ...     return fn.decoders.image(jpegs, output_type=types.RGB), labels
"""

from __future__ import annotations

import contextlib
import functools
import io
import struct
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
from PIL import Image, ImageOps, UnidentifiedImageError

from augkit import backend, kinds, types
from augkit.operators.base import RunContext, SampleOperator, finish
from augkit.operators.decoders import jpeg, nvjpeg
from augkit.operators.registry import (
    Arg,
    InputSpec,
    OperatorSchema,
    OutputSpec,
    fixed_kinds,
    register,
    to_bool,
    to_float,
    to_int,
    to_ints,
)
from augkit.operators.screening import Rejected, keep_screened
from augkit.tensors import TensorList

# Pillow refuses images over twice its Image.MAX_IMAGE_PIXELS (89,478,485) as decompression
# bombs; augkit's default limit is that same figure, checked before any pixel is decoded.
DEFAULT_MAX_PIXELS = 178_956_970
ON_ERROR = ("raise", "skip")
_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"

_GREY16 = ("I;16", "I;16L", "I;16B", "I;16N", "I")
_OUTPUT_TYPES = (types.RGB, types.BGR, types.GRAY, types.ANY_DATA)
_FAST_COLORSPACES = {types.RGB: "RGB", types.BGR: "BGR", types.GRAY: "GRAY", types.ANY_DATA: "ANY"}


# Pillow's EXIF parser (in PIL.TiffImagePlugin) warns with a UserWarning about tags it cannot
# read ("Possibly corrupt EXIF data", "Tag data larger than file"); the decoder reads what it
# can (the orientation, if any) and otherwise keeps the stored pixels, as the docstring says,
# so these only alarm. warnings.catch_warnings() is not thread-safe (decoding runs on threads),
# hence one filter, on UserWarnings from that Pillow module alone.
warnings.filterwarnings("ignore", category=UserWarning, module=r"PIL\.TiffImagePlugin")


def _output_type(value: Any) -> types.DALIImageType:
    if isinstance(value, str) and value.upper() in types.DALIImageType.__members__:
        value = types.DALIImageType[value.upper()]
    elif type(value) is int:
        with contextlib.suppress(ValueError):
            value = types.DALIImageType(value)
    if not isinstance(value, types.DALIImageType):
        raise ValueError(
            f"expected types.RGB, types.BGR, types.GRAY or types.ANY_DATA, got {value!r}"
        )
    if value not in _OUTPUT_TYPES:
        raise ValueError(
            f"types.{value.name} is not supported by augkit's decoder; use types.RGB, "
            f"types.BGR, types.GRAY or types.ANY_DATA"
        )
    return value


def _uint8_only(value: Any) -> types.DALIDataType:
    dtype = types.to_dtype(value)
    if dtype != types.UINT8:
        raise ValueError(
            f"the image decoder produces types.UINT8 only, got types.{dtype.name}; convert "
            f"afterwards, e.g. with fn.cast or fn.crop_mirror_normalize"
        )
    return dtype


def _on_error(value: Any) -> str:
    if value not in ON_ERROR:
        raise ValueError(f"expected 'raise' or 'skip', got {value!r}")
    return value


def _max_pixels(value: Any) -> int | None:
    return None if value is None else to_int(1)(value)


def _size_hint(value: Any) -> tuple[int, int]:
    sizes = to_ints(None, 1)(value)
    if len(sizes) not in (1, 2):
        raise ValueError(f"expected 1 or 2 positive sizes (H, W), got {len(sizes)}")
    return (sizes[0], sizes[-1])


# --- decoding ------------------------------------------------------------------------------


def open_image(
    data: np.ndarray,
    draft: tuple[int, int] | None = None,
    max_pixels: int | None = DEFAULT_MAX_PIXELS,
) -> Image.Image:
    """The decoded Pillow image of ``data`` (encoded bytes).

    ``draft`` (H, W, after EXIF orientation): let a JPEG decode at 1/2, 1/4 or 1/8 of its size
    (Pillow's ``draft``), as long as the result still covers it. ``max_pixels``: refuse a file
    whose header claims more pixels, before its pixels are decoded.

    Raises:
        ValueError: with a plain reason, when the bytes are not an image Pillow can decode.
    """
    if data.size == 0:
        raise ValueError("cannot decode: the data is empty (0 bytes)")
    data = np.ascontiguousarray(data)
    _check_png_size(data, max_pixels)
    try:
        # numpy's stubs declare ndarray.__buffer__ only for Python >= 3.12
        image = Image.open(io.BytesIO(memoryview(data)))  # type: ignore[arg-type]
    except UnidentifiedImageError:
        raise ValueError("cannot decode: not a recognised image format") from None
    except Image.DecompressionBombError as exc:
        raise ValueError(f"image too large: {exc}") from None
    except Exception as exc:
        raise ValueError(_reason(exc, "", "header")) from exc
    jpeg.check_pixels(*image.size, max_pixels)
    if draft is not None and image.format == "JPEG":
        _draft(image, draft)
    try:
        image.load()
    except Exception as exc:
        raise ValueError(_reason(exc, image.format, "data")) from exc
    return image


def _check_png_size(data: np.ndarray, max_pixels: int | None) -> None:
    # Read from IHDR before Pillow opens the file: Pillow would warn (DecompressionBombWarning)
    # about an image over its own limit before augkit could refuse it with its message.
    if max_pixels is not None and data.size >= 24 and data[:8].tobytes() == _PNG_SIGNATURE:
        width, height = struct.unpack(">II", data[16:24].tobytes())
        jpeg.check_pixels(width, height, max_pixels)


def _draft(image: Image.Image, hint: tuple[int, int]) -> None:
    height, width = hint
    with contextlib.suppress(Exception):
        if image.getexif().get(0x0112) in (5, 6, 7, 8):
            height, width = width, height
    if height > 0 and width > 0:
        image.draft(None, (width, height))


def _reason(exc: Exception, fmt: str | None, part: str) -> str:
    what = f"{fmt} {part}" if fmt else f"image {part}"
    if isinstance(exc, EOFError) or "truncated" in str(exc).lower():
        return f"truncated image data ({what}: {exc})"
    return f"cannot decode: corrupt {what} ({type(exc).__name__}: {exc})"


def _grey16_to_uint8(image: Image.Image) -> np.ndarray:
    values = np.asarray(image).astype(np.int64)
    values = np.clip(values, 0, 65535)
    return ((values * 255 + 32767) // 65535).astype(np.uint8)


def _drop_transparency(image: Image.Image) -> Image.Image:
    # Palette (or grey/RGB) images with a transparent colour: going through RGBA is Pillow's
    # warning-free route; the alpha channel is dropped afterwards, as DALI drops it.
    if "transparency" in image.info and image.mode not in ("RGBA", "LA", "PA"):
        return image.convert("RGBA")
    return image


def _rgb(image: Image.Image) -> np.ndarray:
    if image.mode in _GREY16:
        return np.repeat(_grey16_to_uint8(image)[..., None], 3, axis=2)
    image = _drop_transparency(image)
    if image.mode != "RGB":
        image = image.convert("RGB")
    return np.asarray(image)


def _grey(image: Image.Image) -> np.ndarray:
    if image.mode in _GREY16:
        return _grey16_to_uint8(image)
    if image.mode in ("L", "LA", "1"):
        return np.asarray(image.convert("L"))
    return np.asarray(Image.fromarray(_rgb(image)).convert("L"))


def _any_data(image: Image.Image) -> np.ndarray:
    mode = image.mode
    if mode in _GREY16:
        return _grey16_to_uint8(image)[..., None]
    transparent = "transparency" in image.info
    if mode in ("L", "1") and not transparent:
        return np.asarray(image.convert("L"))[..., None]
    if mode in ("L", "1", "LA", "La"):
        return np.asarray(image.convert("LA"))
    if mode in ("RGBA", "RGBa", "PA") or (mode in ("P", "RGB") and transparent):
        return np.asarray(image.convert("RGBA"))
    return _rgb(image)


def decode_image(
    data: np.ndarray,
    output_type: types.DALIImageType = types.RGB,
    adjust_orientation: bool = True,
    dct_downscale_hint: tuple[int, int] | None = None,
    max_pixels: int | None = DEFAULT_MAX_PIXELS,
) -> np.ndarray:
    """Decode one encoded image (1-D uint8 bytes) to a uint8 (H, W, C) array.

    JPEGs go through the fast path of ``jpeg.py`` where it applies, everything else (and every
    file it turns down) through Pillow. ``dct_downscale_hint`` (H, W): the size the image will
    be resized to next; a JPEG may then be decoded at 1/2, 1/4 or 1/8 of its size, never below
    the hint (see the module docstring for its accuracy cost). ``max_pixels``: a file whose
    header claims more pixels is refused before it is decoded (``None``: no limit of augkit's).

    Raises:
        ValueError: the bytes are not an image that can be decoded, with the reason in plain
            words (empty, not an image format, truncated, corrupt, too large).

    Example:
        >>> import numpy as np
        >>> data = np.fromfile("data/images/animals/chelsea_cat.jpg", np.uint8)
        >>> decode_image(data).shape[2]
        3
    """
    if output_type in _FAST_COLORSPACES:
        data = np.ascontiguousarray(data)
        fast = jpeg.decode(
            data, _FAST_COLORSPACES[output_type], adjust_orientation, dct_downscale_hint, max_pixels
        )
        if fast is not None:
            return fast
    image = open_image(data, dct_downscale_hint, max_pixels)
    if adjust_orientation:
        # Unreadable EXIF is no reason to lose the image: it is then kept as stored.
        with contextlib.suppress(Exception):
            ImageOps.exif_transpose(image, in_place=True)
    if output_type == types.GRAY:
        return _grey(image)[..., None]
    if output_type == types.ANY_DATA:
        return _any_data(image)
    rgb = _rgb(image)
    return rgb[..., ::-1] if output_type == types.BGR else rgb


def check_encoded(operator: str, sample: Any, source: str, what: str) -> None:
    """Raise ValueError unless ``sample`` is encoded bytes on the CPU (a 1-D uint8 array), in a
    message naming ``operator``, where such bytes come from (``source``) and what they are
    (``what``)."""
    if backend.is_gpu_array(sample):
        raise ValueError(f"{operator} expects encoded bytes on the CPU ({source}), got a GPU array")
    if sample.ndim != 1 or sample.dtype != np.uint8:
        raise ValueError(
            f"{operator} expects encoded bytes ({what}), got shape {sample.shape} and dtype "
            f"{sample.dtype}"
        )


class ImageDecoder(SampleOperator):
    """The decoder; with ``on_error="skip"`` a screening operator
    (``augkit.operators.screening``: ``screen`` decodes, a bad file is ``Rejected``).

    ``device="mixed"``: the batch kernel ``mixed_batch`` decodes the batch's JPEGs on the GPU
    (``nvjpeg.decode_images``) and the rest on the CPU; ``gpu_decode_device`` (None: the
    pipeline's ``cuda:<device_id>``) is the torch device it decodes on: tests set it to "cpu"
    to run the mixed kernels' code on a machine without a GPU (outputs then stay NumPy)."""

    gpu_decode_device: str | None = None

    def setup(self) -> None:
        self._device_id = 0
        if self.device == "mixed":
            nvjpeg.unavailable_reason()  # imports torch and torchvision here, at build

    def screens(self) -> bool:
        return self.args["on_error"] == "skip"

    def chainable(self) -> bool:
        return self.device == "cpu" and not self.screens()

    def check_input(self, index: int, sample: Any, layout: str) -> None:
        check_encoded("decoders.image", sample, "the reader's output", "1-D uint8")

    def cpu(
        self,
        data: np.ndarray,
        *,
        output_type: types.DALIImageType,
        adjust_orientation: bool,
        dct_downscale_hint: tuple[int, int] | None = None,
        max_pixels: int | None = DEFAULT_MAX_PIXELS,
        **_: Any,
    ) -> np.ndarray:
        return decode_image(data, output_type, adjust_orientation, dct_downscale_hint, max_pixels)

    # --- device="mixed" --------------------------------------------------------------------

    def torch_device(self) -> str:
        """The torch device the mixed kernels decode on."""
        return self.gpu_decode_device or f"cuda:{self._device_id}"

    def cpu_decoder(self) -> Any:
        """The CPU decode of one sample's bytes with this operator's arguments: the mixed
        kernels' fall-back for what the GPU decoder does not read."""
        args = self.args
        return functools.partial(
            decode_image,
            output_type=args["output_type"],
            adjust_orientation=args["adjust_orientation"],
            dct_downscale_hint=args.get("dct_downscale_hint"),
            max_pixels=args.get("max_pixels", DEFAULT_MAX_PIXELS),
        )

    def decode_mixed(self, ctx: RunContext, batch: TensorList) -> list[Any]:
        """Each sample of ``batch`` decoded (JPEGs on the GPU, the rest on the CPU: a CuPy or a
        NumPy array, see ``place``), or the exception that says why it cannot be."""
        self._device_id = ctx.device_id or 0
        samples = batch.samples
        values: list[Any] = [None] * len(samples)
        good = []
        for i, sample in enumerate(samples):
            try:
                self.check_input(0, sample, batch.layout())
                good.append(i)
            except ValueError as exc:
                values[i] = exc
        decoded, _ = nvjpeg.decode_images(
            [samples[i] for i in good],
            self.torch_device(),
            self.cpu_decoder(),
            self.args["output_type"],
            self.args["adjust_orientation"],
            self.args.get("max_pixels", DEFAULT_MAX_PIXELS),
            ctx.map,
        )
        for i, value in zip(good, decoded, strict=True):
            values[i] = value
        return values

    def place(self, image: Any) -> Any:
        """A decoded sample where the mixed decoder's outputs live: on the GPU (a NumPy array
        from the CPU fall-back is copied there), or read-only NumPy when decoding on "cpu"."""
        if backend.is_gpu_array(image):
            return image
        if self.torch_device() == "cpu":
            return finish(image)
        return backend.to_gpu(image, self._device_id)

    def mixed_batch(
        self, ctx: RunContext, inputs: Sequence[TensorList], arg_inputs: dict[str, TensorList]
    ) -> list[TensorList] | None:
        """The whole batch at once (one batched GPU decode); the first sample that cannot be
        decoded raises, named, as the per-sample kernels do."""
        if not inputs or not len(inputs[0]):
            return None
        values = self.decode_mixed(ctx, inputs[0])
        for i, value in enumerate(values):
            if isinstance(value, BaseException):
                raise self.fail(f"{type(value).__name__}: {value}", i, inputs) from value
        return self.outputs_of([(self.place(v),) for v in values], list(inputs))

    def mixed(self, data: np.ndarray, **args: Any) -> Any:
        """One sample of DALI's "mixed" decoder (what ``mixed_batch`` does for a batch)."""
        (value,), _ = nvjpeg.decode_images(
            [data],
            self.torch_device(),
            self.cpu_decoder(),
            args["output_type"],
            args["adjust_orientation"],
            args.get("max_pixels", DEFAULT_MAX_PIXELS),
        )
        if isinstance(value, BaseException):
            raise value
        return self.place(value)

    # --- screening (on_error="skip") -------------------------------------------------------

    def screen(self, ctx: RunContext, batch: TensorList) -> list[Any]:
        """Each sample of ``batch`` decoded (on the CPU, or as the mixed kernels decode), or
        ``Rejected`` with the reason (plain words) why it cannot be: what ``on_error="skip"``
        runs, in the reader's read stage of a pipeline (``Reader.attach_screen``), or here in
        debug mode and eager calls."""
        if self.device == "mixed":
            return [
                Rejected(_rejection(v)) if isinstance(v, BaseException) else v
                for v in self.decode_mixed(ctx, batch)
            ]

        def one(i: int) -> Any:
            sample = batch.samples[i]
            try:
                self.check_input(0, sample, batch.layout())
                return self.cpu(sample, **self.args)
            except Exception as exc:
                return Rejected(_rejection(exc))

        return ctx.map(one, len(batch))

    def run(
        self, ctx: RunContext, inputs: Sequence[TensorList], arg_inputs: dict[str, TensorList]
    ) -> list[TensorList]:
        self._device_id = ctx.device_id or 0
        if not self.screens():
            return super().run(ctx, inputs, arg_inputs)
        batch = inputs[0]
        values = ctx.notes.screened.get(self.name)
        if values is None:  # no reader screened it: debug mode, eager calls
            values = ctx.notes.screened[self.name] = self.screen(ctx, batch)
        place = finish if self.device == "cpu" else self.place
        return [keep_screened(ctx, self.name, batch, values, place, "HWC", np.uint8)]

    def _to_gpu(self, image: np.ndarray) -> Any:
        return backend.to_gpu(image, self._device_id)

    def output_layout(self, index: int, inputs: Sequence[TensorList]) -> str:
        return "HWC"

    def empty_dtype(self, index: int) -> Any:
        return np.uint8


def _rejection(exc: BaseException) -> str:
    """Why a sample is skipped: a plain decode failure's own words, else what it was."""
    if isinstance(exc, ValueError):
        return str(exc)
    return f"{type(exc).__name__}: {exc}"


_COMPAT = "accepted for DALI compatibility; no effect in augkit"

register(
    OperatorSchema(
        name="decoders.image",
        class_name="decoders.Image",
        impl=ImageDecoder,
        devices=("cpu", "mixed"),
        aliases=("ImageDecoder",),
        fn_aliases=("image_decoder",),
        accepts=[
            InputSpec(
                "encoded bytes (1-D uint8 samples, as fn.readers.file gives them)",
                kinds=("encoded",),
                ndims=(1,),
                hints={
                    "image": "they are decoded already: give the decoder the reader's output",
                    "labels": "labels are not files: decode the reader's first output "
                    "(jpegs, labels = fn.readers.file(...))",
                },
            )
        ],
        output_kinds=fixed_kinds(
            OutputSpec(kind=kinds.IMAGE, ndim=3, layout="HWC", what="decoded HWC images")
        ),
        doc=(
            "Decodes images (JPEG, PNG, BMP, TIFF, WebP and any format Pillow reads) from "
            "encoded bytes (uint8, 1-D, as fn.readers.file gives them) to uint8 images with "
            'layout "HWC". ``output_type`` chooses RGB (default), BGR, GRAY (one channel) or '
            "ANY_DATA (the file's own channels); the EXIF orientation is applied unless "
            '``adjust_orientation=False``. ``device="mixed"`` returns the images on the GPU '
            "(JPEGs decoded there with nvJPEG through torchvision, other formats on the CPU). "
            "A file that cannot be decoded raises an error naming the "
            "sample and its file."
        ),
        args=[
            Arg(
                "output_type",
                "colour space of the output: types.RGB, types.BGR, types.GRAY, types.ANY_DATA",
                types.RGB,
                _output_type,
            ),
            Arg("dtype", "output data type (types.UINT8 only)", types.UINT8, _uint8_only),
            Arg(
                "adjust_orientation",
                "apply the EXIF orientation tag to the decoded image",
                True,
                to_bool,
            ),
            Arg(
                "dct_downscale_hint",
                "augkit only, opt-in: (H, W) (or one number for both) of the resize that follows; "
                "a JPEG may then decode at 1/2, 1/4 or 1/8 scale, never below it (~20% faster "
                "decode + resize to 300x300, but a mean 0.5-1.0 levels from the full decode; "
                "None: full size)",
                None,
                _size_hint,
            ),
            Arg(
                "on_error",
                "augkit only: what a sample that cannot be decoded does: 'raise' (an error "
                "naming the sample and its file) or 'skip' (it is replaced by the reader's next "
                "good sample, so batches stay full; each skip is a SkippedSampleWarning and a "
                "record in Pipeline.skipped). 'skip' needs the input to come straight from a "
                "reader",
                "raise",
                _on_error,
            ),
            Arg(
                "max_pixels",
                "augkit only: refuse images whose header claims more pixels than this, before "
                "decoding them (a decompression-bomb guard; default 178956970, Pillow's own "
                "limit; None: no limit of augkit's)",
                DEFAULT_MAX_PIXELS,
                _max_pixels,
            ),
            Arg("affine", _COMPAT, True, to_bool),
            Arg("hw_decoder_load", _COMPAT, 0.65, to_float(0.0, 1.0)),
            Arg("hybrid_huffman_threshold", _COMPAT, 1000000, to_int(0)),
            Arg(
                "jpeg_fancy_upsampling",
                _COMPAT + " (Pillow always upsamples smoothly)",
                False,
                to_bool,
            ),
            Arg("use_fast_idct", _COMPAT + " (Pillow uses the accurate IDCT)", False, to_bool),
            Arg("preallocate_height_hint", _COMPAT, 0, to_int(0)),
            Arg("preallocate_width_hint", _COMPAT, 0, to_int(0)),
            Arg("device_memory_padding", _COMPAT, 16777216, to_int(0)),
            Arg("device_memory_padding_jpeg2k", _COMPAT, 0, to_int(0)),
            Arg("host_memory_padding", _COMPAT, 8388608, to_int(0)),
            Arg("host_memory_padding_jpeg2k", _COMPAT, 0, to_int(0)),
            Arg("cache_batch_copy", _COMPAT, True, to_bool),
            Arg("cache_debug", _COMPAT, False, to_bool),
            Arg("cache_size", _COMPAT, 0, to_int(0)),
            Arg("cache_threshold", _COMPAT, 0, to_int(0)),
            Arg("cache_type", _COMPAT, ""),
            Arg("split_stages", _COMPAT + " (deprecated in DALI)", False, to_bool),
            Arg("use_chunk_allocator", _COMPAT + " (deprecated in DALI)", False, to_bool),
            Arg("memory_stats", _COMPAT, False, to_bool),
        ],
    )
)
