"""Mutation fuzzing of the image decoder (issue 6): real files (JPEGs of data/images, and a PNG,
a progressive JPEG and a JPEG with EXIF orientation made with Pillow) with bits flipped, cut
short, spliced with another file, chunks duplicated, runs zeroed. ``decode_image`` must give a
uint8 (H, W, C) array or raise ``ValueError`` (its error for data it cannot decode); through
``augkit.eager`` (the pipeline's code path) the error is an ``OperatorError``. Anything else (an
IndexError, a struct.error, a crash) is a bug.

Derandomized, ``AUGKIT_FUZZ_DECODER_EXAMPLES`` examples (default 200). A longer run:

    AUGKIT_FUZZ_DECODER_EXAMPLES=5000 .venv/bin/python -m pytest tests/test_fuzz_decoder.py -q
"""

from __future__ import annotations

import functools
import io
import os
import pathlib
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from PIL import Image

from augkit import eager
from augkit.errors import OperatorError
from augkit.operators.decoders.image import decode_image

EXAMPLES = int(os.environ.get("AUGKIT_FUZZ_DECODER_EXAMPLES", "200"))
IMAGES = pathlib.Path(__file__).resolve().parents[1] / "data" / "images"
# Small enough that a mutated header claiming a huge image is refused before any allocation
# (every original here is well below it).
MAX_PIXELS = 1 << 22

SETTINGS = settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@functools.cache
def originals() -> tuple[bytes, ...]:
    """The files mutated: the three smallest photos, and made with Pillow, a PNG (RGBA), a
    progressive JPEG and a JPEG with an EXIF orientation."""
    photos = sorted(IMAGES.glob("*/*.jpg"), key=lambda p: p.stat().st_size)[:3]
    files = [p.read_bytes() for p in photos]
    pixels = np.asarray(Image.open(photos[0]).convert("RGB").resize((48, 32)))

    def save(image: Image.Image, fmt: str, **kwargs: object) -> bytes:
        buffer = io.BytesIO()
        image.save(buffer, fmt, **kwargs)
        return buffer.getvalue()

    rgba = Image.fromarray(np.dstack([pixels, pixels[..., :1]]), "RGBA")
    exif = Image.Exif()
    exif[0x0112] = 6  # orientation: rotate 90
    files += [
        save(rgba, "PNG"),
        save(Image.fromarray(pixels), "JPEG", progressive=True, quality=80),
        save(Image.fromarray(pixels), "JPEG", exif=exif.tobytes()),
    ]
    return tuple(files)


@st.composite
def position(draw: st.DrawFn, size: int) -> int:
    """An offset into a file of ``size`` bytes, half of the time in its first 1 KiB (headers,
    where a parser makes its decisions)."""
    if size == 0:
        return 0
    high = min(size, 1024) if draw(st.booleans()) else size
    return draw(st.integers(0, high - 1))


@st.composite
def mutated(draw: st.DrawFn) -> tuple[bytes, list[str]]:
    """A file with 1 to 4 mutations, and the mutations in words (to reproduce a failure)."""
    files = originals()
    k = draw(st.integers(0, len(files) - 1))
    data = bytearray(files[k])
    done = [f"file {k} ({len(data)} bytes)"]
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["flip", "truncate", "splice", "duplicate", "zeros", "bytes"]))
        at = draw(position(len(data)))
        if kind == "flip":
            bit = draw(st.integers(0, 7))
            if data:
                data[at] ^= 1 << bit
            done.append(f"flip bit {bit} of byte {at}")
        elif kind == "truncate":
            data = data[:at]
            done.append(f"truncate to {at}")
        elif kind == "splice":
            other = files[draw(st.integers(0, len(files) - 1))]
            start = draw(position(len(other)))
            length = draw(st.integers(1, 512))
            data[at : at + length] = other[start : start + length]
            done.append(f"replace [{at}:{at + length}] with another file's [{start}:+{length}]")
        elif kind == "duplicate":
            length = draw(st.integers(1, 256))
            chunk = data[at : at + length]
            where = draw(position(len(data)))
            data[where:where] = chunk
            done.append(f"copy [{at}:{at + length}] to {where}")
        elif kind == "zeros":
            length = draw(st.integers(1, 64))
            data[at : at + length] = bytes(len(data[at : at + length]))
            done.append(f"zero [{at}:{at + length}]")
        else:
            new = draw(st.binary(min_size=1, max_size=8))
            data[at : at + len(new)] = new
            done.append(f"write {new.hex()} at {at}")
    return bytes(data), done


def _decode(data: bytes) -> np.ndarray | None:
    """``decode_image``'s result, or ``None`` for the ValueError it may raise; warnings (Pillow
    warns about some corrupt files) are recorded, not raised."""
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        try:
            return decode_image(np.frombuffer(data, np.uint8), max_pixels=MAX_PIXELS)
        except ValueError:
            return None


def _check_image(out: np.ndarray) -> None:
    assert isinstance(out, np.ndarray) and out.dtype == np.uint8, type(out)
    assert out.ndim == 3 and out.shape[2] in (1, 3, 4) and min(out.shape) > 0, out.shape


@SETTINGS
@given(case=mutated())
def test_mutated_files_decode_or_raise_value_error(case: tuple[bytes, list[str]]) -> None:
    data, mutations = case
    try:
        out = _decode(data)
    except Exception as exc:
        raise AssertionError(
            f"decode_image raised {type(exc).__name__} (not ValueError) after: "
            f"{'; '.join(mutations)}. Reproduce with bytes.fromhex('{data.hex()}')"
            if len(data) < 4096
            else f"decode_image raised {type(exc).__name__} (not ValueError) after: "
            f"{'; '.join(mutations)}"
        ) from exc
    if out is not None:
        _check_image(out)


@settings(SETTINGS, max_examples=max(EXAMPLES // 8, 10))
@given(case=mutated())
def test_mutated_files_through_the_operator(case: tuple[bytes, list[str]]) -> None:
    """The operator's path: a valid batch, or an OperatorError naming the sample."""
    data, _ = case
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        try:
            out = eager.decoders.image(np.frombuffer(data, np.uint8), max_pixels=MAX_PIXELS)
        except OperatorError as exc:
            assert "sample #0" in str(exc)
            return
    _check_image(out)


@pytest.mark.parametrize("k", range(6))
def test_the_originals_decode(k: int) -> None:
    out = _decode(originals()[k])
    assert out is not None
    _check_image(out)
