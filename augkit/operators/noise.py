"""``fn.noise.gaussian``, ``fn.noise.salt_and_pepper`` and ``fn.noise.shot``: DALI 2.4's noise
operators, drawn from each sample's own counter-based stream (``random = True``: the kernel's
``rng``), so results do not depend on threads, debug mode or the rest of the batch. DALI's
random streams are not reproduced: the draws differ, their distributions and every
deterministic limit (``stddev=0``, ``prob=0`` or 1, ``factor=0``) are DALI's.

Decisions and traps (DALI's ``operators/random/noise/*.h``, checked against DALI 2.4):

- Types: (u)int8/16/32/64 and float32, as in DALI (float16, float64 and bool are refused).
  Output shape, layout and type are the input's. Like colour operators, they take images (and
  generic tensors), not masks, boxes or keypoints.
- ``gaussian``: ``out = ConvertSat(in + n)``, ``n ~ N(mean, stddev)`` per element, drawn in
  float32 for 8/16-bit and float32 inputs and in float64 for 32/64-bit integers (DALI's
  ``FloatType``); integers round half away from zero and saturate (``mean=2.5`` turns 0 into
  3, ``mean=300`` saturates int8 at 127). ``stddev=0`` adds exactly ``mean``; a negative
  ``stddev`` is accepted, as in DALI (the same distribution).
- ``salt_and_pepper``: one float32 ``u`` in [0, 1) per element (``per_channel=True``) or per
  pixel, shared by its channels (``per_channel=False``, the default: the C axis of the layout;
  an input without a layout is taken as channel-last, so a 1-D one shares one draw, as in
  DALI; a layout without C draws per element, where DALI refuses it); ``u < prob *
  salt_vs_pepper`` gives ``salt_val``, else ``u < prob`` gives ``pepper_val``, else the input.
  The defaults are the type's maximum and minimum (1 and -1 for float32); given values are
  converted as C++'s ``static_cast`` converts a float (truncated and wrapped: ``salt_val=300``
  is 44 in uint8; ``augkit.operators.erase.cpp_cast``). ``prob`` and ``salt_vs_pepper`` must
  be in [0, 1].
- ``shot``: ``out = ConvertSat(poisson(max(0, in * (1 / factor))) * factor)`` in float32
  (``1 / factor`` is rounded to float32 first, as DALI does), so outputs are multiples of
  ``factor``. Trap: DALI's documentation says ``factor=0`` is the identity, but DALI 2.4
  returns **zeros** (its kernel multiplies by the factor after the identity draw); augkit gives
  DALI's zeros. A negative factor turns positive inputs into 0. A factor so small that the
  Poisson mean exceeds 1e18 is refused (DALI hangs on it).
- Speed: the bulk draws come from an SFC64 generator seeded from the sample's stream (two to
  three times faster than the stream's Philox; just as deterministic), in float32 where DALI
  draws float32; float32 Gaussian draws come from OpenCV's ``randn`` (4x faster again),
  reseeded per sample with 31 bits of the sample's stream (``cv2.setRNGSeed`` sets the
  calling thread's generator only; two samples share a noise field with chance 2**-31); salt
  and pepper are written with ``cv2.copyTo`` (a masked copy) where the channels are last;
  integer results go through ``convert_sat`` (uint8: an exact shortcut, ``_to_uint8``, 4x
  faster).

GPU (``device="gpu"``, issue 18): every draw is made on the host exactly as on the CPU (the
same sample stream, the same OpenCV/SFC64 calls, the same shapes), so a seed gives the GPU the
CPU's noise; only its application runs on the device (``backend.array_module``: CuPy). The
drawn field is moved with ``xp.asarray``; ``gaussian`` then adds it with the CPU's float32 (or
float64) ufunc sequence and ``convert_sat`` (equal to the uint8 shortcut, bit for bit);
``salt_and_pepper`` moves the uniform draws and replaces with ``xp.where`` (the salt and
pepper values as 0-d device arrays of the input type); ``shot`` computes the Poisson means on
the device, brings them to the host (the Poisson draw needs them), and moves the counts back
for the multiplication and conversion. CuPy constructs relied on: ``asarray``, in-place
``*=``/``+=`` with NumPy scalars, ``where`` with broadcasting, ``fmax``, ``max``, ``astype``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from augkit import backend
from augkit.operators.base import SampleOperator
from augkit.operators.color.cast import convert_sat
from augkit.operators.erase import cpp_cast
from augkit.operators.layouts import COLOR_IMAGE, NUMBER_TYPES, check_type
from augkit.operators.registry import Arg, OperatorSchema, keeps_kind, register, to_bool, to_float
from augkit.tensors import TensorList

# DALI's noise types: the integers and float32.
_TYPES = tuple(t for t in NUMBER_TYPES if t not in (np.float16, np.float64))
# The largest Poisson mean NumPy draws from (and far beyond any meaningful shot noise).
_MAX_LAMBDA = 1e18


def _fast(rng: np.random.Generator) -> np.random.Generator:
    """A generator for the bulk draws, seeded from the sample's stream ``rng``: NumPy's SFC64,
    two to three times faster than Philox for uniform, normal and Poisson draws, and as
    deterministic (it depends only on the sample's stream)."""
    return np.random.Generator(np.random.SFC64(int(rng.integers(0, 2**63))))


# The types cv2.copyTo works on (its masked copy is 10x faster than np.copyto's where=).
_CV_TYPES = tuple(
    np.dtype(t) for t in (np.uint8, np.int8, np.uint16, np.int16, np.int32, np.float32)
)


_BELOW_HALF = np.float32(0.49999997)  # the largest float32 below 0.5


def _to_uint8(values: np.ndarray) -> np.ndarray:
    """``convert_sat(values, uint8)`` for finite float32 ``values``, 4x faster: rounding half
    away from zero is ``floor(v + 0.5)`` for v >= 0 except at 0.49999997 (where ``v + 0.5``
    rounds up to 1.0 in float32), and negative values saturate to 0 either way. (Exact for
    every float32 value: tested against ``convert_sat``.)"""
    rounded = values + np.float32(0.5)
    np.floor(rounded, out=rounded)
    np.clip(rounded, 0, 255, out=rounded)
    out = rounded.astype(np.uint8)
    out[values == _BELOW_HALF] = 0
    return out


def _convert(values: np.ndarray, dtype: np.dtype, finite: bool) -> np.ndarray:
    if finite and dtype == np.uint8 and values.dtype == np.float32:
        return _to_uint8(values)
    return convert_sat(values, dtype)


class NoiseOperator(SampleOperator):
    """A per-sample noise kernel on DALI's noise types."""

    random = True
    what = "noise"

    def check_input(self, index: int, sample: Any, layout: str) -> None:
        check_type(f"noise.{self.what} takes data", sample.dtype, _TYPES, " (as DALI)")


def _float_type(dtype: np.dtype) -> type:
    """DALI's ``FloatType`` of Gaussian noise: double for 32/64-bit integers, else float."""
    return np.float64 if dtype.kind in "iu" and dtype.itemsize >= 4 else np.float32


class GaussianNoise(NoiseOperator):
    what = "gaussian"

    def setup(self) -> None:
        self.cv2 = backend.opencv()

    def standard_normal(self, shape: tuple[int, ...], ftype: type, rng: Any) -> np.ndarray:
        """N(0, 1) draws: OpenCV's ``randn`` in float32 (4x faster than NumPy's), seeded from
        the sample's stream on this thread (OpenCV's generator is per thread), else NumPy."""
        size = int(np.prod(shape))
        if ftype is np.float32 and 0 < size < 2**31:
            noise = np.empty((size, 1), np.float32)
            self.cv2.setRNGSeed(int(rng.integers(0, 2**31)))
            self.cv2.randn(noise, 0.0, 1.0)
            return noise.reshape(shape)
        return np.asarray(_fast(rng).standard_normal(shape, dtype=ftype))

    def cpu(
        self, sample: Any, *, mean: float, stddev: float, rng: np.random.Generator, **_: Any
    ) -> Any:
        return self._gaussian(sample, mean, stddev, rng, np)

    def gpu(
        self, sample: Any, *, mean: float, stddev: float, rng: np.random.Generator, **_: Any
    ) -> Any:
        """The CPU's draws (on the host), added on ``sample``'s device."""
        return self._gaussian(sample, mean, stddev, rng, backend.array_module(sample))

    def _gaussian(
        self, sample: Any, mean: float, stddev: float, rng: np.random.Generator, xp: Any
    ) -> Any:
        ftype = _float_type(sample.dtype)
        with np.errstate(all="ignore"):
            noise = self.standard_normal(sample.shape, ftype, rng)
            if xp is not np:
                noise = xp.asarray(noise)
            noise *= ftype(stddev)
            noise += ftype(mean)
            noise += sample
            # No NaN or infinity when the arguments are moderate (|noise| < 40 stddevs).
            finite = abs(ftype(stddev)) < 1e30 and abs(ftype(mean)) < 1e30
            if xp is not np:
                return convert_sat(noise, sample.dtype, xp)
            return _convert(noise, sample.dtype, finite)


class SaltAndPepperNoise(NoiseOperator):
    what = "salt_and_pepper"

    def setup(self) -> None:
        self.cv2 = backend.opencv()

    def batch_args(self, inputs: Sequence[TensorList]) -> dict[str, Any]:
        return {"layout": inputs[0].layout()}

    def cpu(self, sample: Any, **args: Any) -> Any:
        return self._salt_and_pepper(sample, np, **args)

    def gpu(self, sample: Any, **args: Any) -> Any:
        """The CPU's uniform draws (on the host), applied with ``xp.where`` on the device."""
        return self._salt_and_pepper(sample, backend.array_module(sample), **args)

    def _salt_and_pepper(
        self,
        sample: Any,
        xp: Any,
        *,
        layout: str,
        prob: float,
        salt_vs_pepper: float,
        salt_val: float | None,
        pepper_val: float | None,
        per_channel: bool,
        rng: np.random.Generator,
        **_: Any,
    ) -> Any:
        dtype = sample.dtype
        if dtype.kind == "f":
            salt, pepper = dtype.type(1), dtype.type(-1)
        else:
            salt, pepper = dtype.type(np.iinfo(dtype).max), dtype.type(np.iinfo(dtype).min)
        if salt_val is not None:
            salt = cpp_cast([salt_val], dtype)[0]
        if pepper_val is not None:
            pepper = cpp_cast([pepper_val], dtype)[0]
        noise_prob = np.float32(prob)
        salt_prob = noise_prob * np.float32(salt_vs_pepper)  # DALI's float32 product
        if layout and len(layout) != sample.ndim:
            raise ValueError(
                f'the layout "{layout}" does not fit a sample with {sample.ndim} dimensions'
            )
        channel = -1
        if not per_channel and sample.ndim:
            channel = layout.find("C") if layout else sample.ndim - 1
        share = sample.shape[channel] if channel >= 0 else 1  # elements sharing one draw
        if share and sample.size and channel in (-1, sample.ndim - 1) and share <= 64:
            # Channel-last (or one draw per element): (pixels, 1, channels) for cv2.copyTo
            # (OpenCV 5 refuses some larger channel counts: 240 fails, 128 works).
            pixels = sample.size // share
            u = _fast(rng).random(pixels, dtype=np.float32)
            if xp is not np:
                flat = sample.reshape(pixels, share)
                out = _replace(flat, u.reshape(pixels, 1), pepper, salt, noise_prob, salt_prob, xp)
                return out.reshape(sample.shape)
            out = np.array(sample).reshape(pixels, 1, share)
            for value, p in ((pepper, noise_prob), (salt, salt_prob)):
                mask = u < p
                if sample.dtype in _CV_TYPES:
                    self.cv2.copyTo(np.full_like(out, value), mask.view(np.uint8)[:, None], out)
                else:
                    np.copyto(out, value, where=mask[:, None, None])
            return out.reshape(sample.shape)
        shape = list(sample.shape)
        if channel >= 0:
            shape[channel] = 1
        u = np.asarray(_fast(rng).random(shape, dtype=np.float32))
        if xp is not np:
            return _replace(sample, u, pepper, salt, noise_prob, salt_prob, xp)
        out = np.array(sample)
        np.copyto(out, pepper, where=u < noise_prob)
        np.copyto(out, salt, where=u < salt_prob)
        return out


def _replace(
    sample: Any, u: np.ndarray, pepper: Any, salt: Any, noise_prob: Any, salt_prob: Any, xp: Any
) -> Any:
    """Salt and pepper on the device: ``u`` (the host's draws, of a shape that broadcasts over
    ``sample``) moved there, pepper where ``u < noise_prob``, then salt where ``u < salt_prob``
    (the CPU's order). The values are 0-d device arrays of the input type, so ``where`` keeps
    the type."""
    draws = xp.asarray(u)
    out = sample
    for value, p in ((pepper, noise_prob), (salt, salt_prob)):
        out = xp.where(draws < p, xp.asarray(np.asarray(value, sample.dtype)), out)
    return out


class ShotNoise(NoiseOperator):
    what = "shot"

    def cpu(self, sample: Any, *, factor: float, rng: np.random.Generator, **_: Any) -> Any:
        return self._shot(sample, factor, rng, np)

    def gpu(self, sample: Any, *, factor: float, rng: np.random.Generator, **_: Any) -> Any:
        """The Poisson means on the device, drawn from on the host (as on the CPU), the counts
        scaled and converted on the device."""
        return self._shot(sample, factor, rng, backend.array_module(sample))

    def _shot(self, sample: Any, factor: float, rng: np.random.Generator, xp: Any) -> Any:
        with np.errstate(all="ignore"):
            factor32 = np.float32(factor)
            if factor32 == 0:
                # DALI 2.4: the identity draw, multiplied by the factor (module docstring).
                return xp.zeros_like(sample)
            inv = np.float32(1) / factor32
            flat = sample.reshape(-1)  # 1-D: NumPy keeps arrays arrays (0-D samples too)
            lam = xp.fmax(np.float32(0), flat.astype(np.float32) * inv)  # NaN: 0
            top = float(lam.max()) if lam.size else 0.0
            if not top <= _MAX_LAMBDA:
                raise ValueError(
                    f"noise.shot: factor={factor} makes Poisson means up to {top:.3g} (the "
                    f"input divided by the factor); they must stay below {_MAX_LAMBDA:g}"
                )
            counts = np.asarray(_fast(rng).poisson(backend.to_cpu(lam)), dtype=np.float32)
            if xp is not np:
                counts = xp.asarray(counts)
                counts *= factor32
                return convert_sat(counts, sample.dtype, xp).reshape(sample.shape)
            counts *= factor32
            finite = bool(np.isfinite(factor32))
            return _convert(counts, sample.dtype, finite).reshape(sample.shape)


_NOISE_TYPES_DOC = "(u)int8/16/32/64 or float32 data, any layout; shape, layout and type are kept"

register(
    OperatorSchema(
        name="noise.gaussian",
        class_name="noise.Gaussian",
        impl=GaussianNoise,
        devices=("cpu", "gpu"),
        accepts=[COLOR_IMAGE],
        output_kinds=keeps_kind,
        doc=(
            "Adds Gaussian noise: ``out = in + n``, ``n ~ N(mean, stddev)`` drawn per element "
            "(in float32; float64 for 32/64-bit integers, as DALI), converted back to the input "
            "type with rounding half away from zero and saturation. mean and stddev may be per "
            f"sample. Takes {_NOISE_TYPES_DOC}."
        ),
        args=[
            Arg("mean", "mean of the noise", 0.0, to_float(), per_sample=True),
            Arg("stddev", "standard deviation of the noise", 1.0, to_float(), per_sample=True),
        ],
    )
)

register(
    OperatorSchema(
        name="noise.salt_and_pepper",
        class_name="noise.SaltAndPepper",
        impl=SaltAndPepperNoise,
        devices=("cpu", "gpu"),
        accepts=[COLOR_IMAGE],
        output_kinds=keeps_kind,
        doc=(
            "Salt-and-pepper noise: each pixel (each element with ``per_channel=True``) is "
            "replaced with probability ``prob``, by ``salt_val`` with probability "
            "``salt_vs_pepper`` and by ``pepper_val`` otherwise. The defaults are the type's "
            "maximum and minimum (1.0 and -1.0 for float32). Every argument but per_channel "
            f"may be per sample. Takes {_NOISE_TYPES_DOC}."
        ),
        args=[
            Arg(
                "prob",
                "probability of an element being replaced",
                0.05,
                to_float(0.0, 1.0),
                per_sample=True,
            ),
            Arg(
                "salt_vs_pepper",
                "probability of a replaced element being salt",
                0.5,
                to_float(0.0, 1.0),
                per_sample=True,
            ),
            Arg(
                "salt_val",
                "the salt value (default: the type's maximum, 1.0 for float)",
                None,
                to_float(),
                per_sample=True,
            ),
            Arg(
                "pepper_val",
                "the pepper value (default: the type's minimum, -1.0 for float)",
                None,
                to_float(),
                per_sample=True,
            ),
            Arg(
                "per_channel",
                "draw for every channel (True) or once per pixel for all channels (False)",
                False,
                to_bool,
            ),
        ],
    )
)

register(
    OperatorSchema(
        name="noise.shot",
        class_name="noise.Shot",
        impl=ShotNoise,
        devices=("cpu", "gpu"),
        accepts=[COLOR_IMAGE],
        output_kinds=keeps_kind,
        doc=(
            "Shot (Poisson) noise: ``out = poisson(max(0, in / factor)) * factor``, converted to "
            "the input type with rounding and saturation: outputs are multiples of ``factor``, "
            "and larger factors give more noise. ``factor=0`` gives zeros, as DALI 2.4 does "
            "(its documentation says the identity). factor may be per sample. Takes "
            f"{_NOISE_TYPES_DOC}."
        ),
        args=[Arg("factor", "the value of one event", 20.0, to_float(), per_sample=True)],
    )
)
