"""``fn.jpeg_compression_distortion``: JPEG artefacts, by encoding each image as a JPEG of
``quality`` and decoding it again, as DALI 2.4's CPU operator does.

Decisions and traps (DALI's ``jpeg_compression_distortion_op_cpu.cc``, checked against 2.4):

- DALI's CPU path is OpenCV: ``cvtColor(RGB2BGR)``, ``imencode(".jpg", IMWRITE_JPEG_QUALITY=
  quality)`` with OpenCV's defaults (baseline, 4:2:0 chroma subsampling, libjpeg-turbo's
  integer DCT), ``imdecode(IMREAD_COLOR)``, ``cvtColor(BGR2RGB)``. augkit runs the same calls
  through ``backend.opencv()``; DALI 2.4's bundled OpenCV and opencv-python both use
  libjpeg-turbo 3.1.2, so the outputs are identical (parity: max diff 0). Another OpenCV build
  (another libjpeg) could differ by a level or two in places.
- ``quality`` is clamped to 1..100, as DALI documents (``quality=0`` or ``500`` are accepted);
  the default is 50 (DALI 2.4's schema).
- Input: uint8 RGB images, HWC with 3 channels, or sequences of them (FHWC: each frame on its
  own), as in DALI; beyond DALI (which refuses them), grayscale images (HW, or HWC with one
  channel) are encoded as grayscale JPEGs. Other types, channel counts and layouts are refused.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from augkit import backend
from augkit.operators.base import SampleOperator
from augkit.operators.layouts import COLOR_IMAGE
from augkit.operators.registry import Arg, OperatorSchema, keeps_kind, register, to_int


class JpegCompressionDistortion(SampleOperator):
    """OpenCV's JPEG encode + decode of each image (each frame of a sequence)."""

    def setup(self) -> None:
        self.cv2 = backend.opencv()

    def check_input(self, index: int, sample: Any, layout: str) -> None:
        if layout not in ("", "HW", "HWC", "FHWC") or (layout and len(layout) != sample.ndim):
            where = f' and layout "{layout}"' if layout else ""
            raise ValueError(
                f"jpeg_compression_distortion needs images with layout HWC (or HW, or FHWC "
                f"sequences), got a sample of shape {tuple(sample.shape)}{where}"
            )
        if not layout and sample.ndim not in (2, 3):
            raise ValueError(
                f"jpeg_compression_distortion needs HWC images; a sample of shape "
                f"{tuple(sample.shape)} without a layout is not one (give FHWC for sequences)"
            )
        if sample.ndim >= 3 and sample.shape[-1] not in (1, 3):
            raise ValueError(
                f"jpeg_compression_distortion needs RGB (3 channels) or grayscale (1 channel) "
                f"images, got {sample.shape[-1]} channels"
            )
        if sample.dtype != np.uint8:
            raise ValueError(
                f"jpeg_compression_distortion takes uint8 images; got {sample.dtype.name}"
            )
        hw = sample.shape[:2] if sample.ndim == 2 or layout != "FHWC" else sample.shape[1:3]
        if 0 in hw or 0 in sample.shape:
            raise ValueError(
                f"jpeg_compression_distortion needs a non-empty image, got a sample of shape "
                f"{tuple(sample.shape)}"
            )

    def frame(self, image: np.ndarray, quality: int) -> np.ndarray:
        cv2 = self.cv2
        params = [cv2.IMWRITE_JPEG_QUALITY, quality]
        if image.ndim == 2 or image.shape[-1] == 1:  # grayscale (augkit only: DALI refuses it)
            _, encoded = cv2.imencode(".jpg", np.ascontiguousarray(image), params)
            return cv2.imdecode(encoded, cv2.IMREAD_GRAYSCALE).reshape(image.shape)
        _, encoded = cv2.imencode(".jpg", cv2.cvtColor(image, cv2.COLOR_RGB2BGR), params)
        return cv2.cvtColor(cv2.imdecode(encoded, cv2.IMREAD_COLOR), cv2.COLOR_BGR2RGB)

    def cpu(self, sample: Any, *, layout: str, quality: int, **_: Any) -> Any:
        quality = min(max(quality, 1), 100)
        if layout != "FHWC":
            out = self.frame(sample, quality)
        else:
            out = np.empty_like(sample)
            for f in range(sample.shape[0]):
                out[f] = self.frame(sample[f], quality)
        return out

    def batch_args(self, inputs: Any) -> dict[str, Any]:
        return {"layout": inputs[0].layout()}


register(
    OperatorSchema(
        name="jpeg_compression_distortion",
        class_name="JpegCompressionDistortion",
        impl=JpegCompressionDistortion,
        accepts=[COLOR_IMAGE],
        output_kinds=keeps_kind,
        doc=(
            "JPEG compression artefacts: each uint8 RGB image (HWC, or each frame of an FHWC "
            "sequence; grayscale HW or HWC images too, beyond DALI) is encoded as a JPEG of "
            "``quality`` (1-100, values outside are clamped; "
            "4:2:0 chroma subsampling) and decoded again, with OpenCV as DALI's CPU operator "
            "does. quality may be per sample (e.g. from fn.random.uniform with dtype INT32). "
            "Shape, layout and type are kept."
        ),
        args=[
            Arg(
                "quality",
                "JPEG quality from 1 (lowest) to 100 (highest); outside values are clamped",
                50,
                to_int(-(2**31), 2**31 - 1),
                per_sample=True,
            )
        ],
    )
)
