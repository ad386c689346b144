"""Corrupt and odd files through ``readers.file`` -> ``decoders.image``: each one decodes as
Pillow decodes it, or gives an error naming the file, the sample and the reason; and
``on_error="skip"`` replaces bad samples by the reader's next good ones, reporting each skip.

DALI 2.4 on CPU (measured, issue 6): a truncated JPEG fails the whole batch ("Failed to decode
sample #3"), a header-only or garbage file gives "nvImageCodec failure: '#4'", a 0-byte file
fails in the reader, and the pipeline object is dead after any of them.
"""

from __future__ import annotations

import io
import os
import pathlib
import struct
import subprocess
import sys
import tempfile
import warnings
import zlib

import numpy as np
import pytest
from PIL import Image, ImageOps

from augkit import eager, fn, pipeline_def, types
from augkit.errors import ArgumentError, GraphError, OperatorError, SkippedSampleWarning
from augkit.pipeline import Pipeline

# --- the files ------------------------------------------------------------------------------


def _save(image: Image.Image, fmt: str, **kwargs) -> bytes:
    out = io.BytesIO()
    image.save(out, fmt, **kwargs)
    return out.getvalue()


def _header_only(jpeg: bytes) -> bytes:
    """A JPEG cut right after its start-of-scan header: every marker, no entropy-coded data."""
    sos = jpeg.index(b"\xff\xda")
    length = struct.unpack(">H", jpeg[sos + 2 : sos + 4])[0]
    return jpeg[: sos + 2 + length]


def _png_chunk(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))


def png_bomb(width: int, height: int, rows: int | None = None) -> bytes:
    """A grey PNG of ``width`` x ``height`` zeros, compressed (a few KB for millions of
    pixels); ``rows`` cuts its data after that many rows (the header still claims all)."""
    z = zlib.compressobj(9)
    row = b"\x00" * (width + 1)
    data = b"".join(z.compress(row) for _ in range(height if rows is None else rows))
    data += z.flush()
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + _png_chunk(b"IHDR", ihdr)
        + _png_chunk(b"IDAT", data)
        + _png_chunk(b"IEND", b"")
    )


@pytest.fixture(scope="module")
def photo_bytes(photo_paths) -> bytes:
    return photo_paths[0].read_bytes()


@pytest.fixture(scope="module")
def photo_image(photo_paths) -> Image.Image:
    return Image.open(photo_paths[0]).convert("RGB")


def rgb_of(image: Image.Image) -> np.ndarray:
    return np.asarray(ImageOps.exif_transpose(image).convert("RGB"))


def odd_files(photo_bytes: bytes, photo: Image.Image) -> dict[str, tuple[bytes, object]]:
    """name -> (content, expected): an RGB reference array, or the reason an error gives."""
    small = photo.resize((64, 48))
    rgba = small.convert("RGBA")
    rgba.putalpha(128)
    grey16 = (np.arange(48 * 64, dtype=np.uint16).reshape(48, 64) * 21).astype(np.uint16)
    exif = Image.Exif()
    exif[0x0112] = 6  # rotate 90 degrees clockwise to display
    rotated = _save(small, "JPEG", quality=95, exif=exif.tobytes())
    cmyk = _save(small.convert("CMYK"), "JPEG", quality=95)
    grey_jpeg = _save(small.convert("L"), "JPEG", quality=95)
    palette = _save(small.convert("P", palette=Image.Palette.ADAPTIVE), "PNG")
    png = _save(small, "PNG")
    rng = np.random.default_rng(6)
    return {
        "truncated.jpg": (photo_bytes[: len(photo_bytes) // 2], "truncated image data"),
        "header_only.jpg": (_header_only(photo_bytes), "truncated image data"),
        "random_bytes.jpg": (
            rng.integers(0, 256, 4096, dtype=np.uint8).tobytes(),
            "not a recognised image format",
        ),
        "empty.jpg": (b"", "the data is empty (0 bytes)"),
        "text.png": (b"this is a text file, not an image\n" * 20, "not a recognised image"),
        "png_named.jpg": (png, np.asarray(small)),
        "grey.jpg": (grey_jpeg, rgb_of(Image.open(io.BytesIO(grey_jpeg)))),
        "palette.png": (palette, rgb_of(Image.open(io.BytesIO(palette)))),
        "rgba.png": (_save(rgba, "PNG"), np.asarray(small)),
        "cmyk.jpg": (cmyk, rgb_of(Image.open(io.BytesIO(cmyk)))),
        "grey16.png": (
            _save(Image.fromarray(grey16), "PNG"),
            np.repeat(((grey16.astype(np.int64) * 255 + 32767) // 65535)[..., None], 3, 2),
        ),
        "exif_rotated.jpg": (rotated, rgb_of(Image.open(io.BytesIO(rotated)))),
        "bomb.png": (png_bomb(15_000, 15_000, rows=2), "image too large: 15000x15000"),
    }


def decode_one(path: pathlib.Path, **decoder_args):
    pipe = Pipeline(batch_size=1, num_threads=1, device_id=None, seed=1)
    with pipe:
        jpegs, _ = fn.readers.file(files=[str(path)], name="Reader")
        pipe.set_outputs(fn.decoders.image(jpegs, name="Decoder", **decoder_args))
    return pipe


@pytest.mark.parametrize(
    "name",
    [
        "truncated.jpg",
        "header_only.jpg",
        "random_bytes.jpg",
        "empty.jpg",
        "text.png",
        "png_named.jpg",
        "grey.jpg",
        "palette.png",
        "rgba.png",
        "cmyk.jpg",
        "grey16.png",
        "exif_rotated.jpg",
        "bomb.png",
    ],
)
def test_each_odd_file_decodes_or_names_file_sample_and_reason(
    tmp_path, photo_bytes, photo_image, name
):
    content, expected = odd_files(photo_bytes, photo_image)[name]
    path = tmp_path / name
    path.write_bytes(content)
    pipe = decode_one(path)
    if isinstance(expected, str):
        with pytest.raises(OperatorError) as info:
            pipe.run()
        message = str(info.value)
        assert message.startswith(f"operator Decoder, sample #0 ({path})"), message
        assert expected in message
        # Nothing is lost: the pipeline goes on (the same bad file again, same message).
        with pytest.raises(OperatorError, match="sample #0"):
            pipe.run()
    else:
        (images,) = pipe.run()
        got = images.at(0)
        assert got.shape == expected.shape
        if name.endswith(".png"):
            np.testing.assert_array_equal(got, expected)
        else:  # JPEG: libjpeg-turbo either way; the fast path is bit-identical for RGB
            assert np.abs(got.astype(int) - expected.astype(int)).mean() < 0.5


def test_exif_orientation_is_applied_like_dali_and_can_be_kept(tmp_path, photo_image):
    """DALI's decoders.image has adjust_orientation=True by default ("use the EXIF orientation
    metadata"); augkit matches, and adjust_orientation=False keeps the stored pixels."""
    exif = Image.Exif()
    exif[0x0112] = 6
    path = tmp_path / "rotated.jpg"
    path.write_bytes(_save(photo_image.resize((64, 48)), "JPEG", quality=95, exif=exif.tobytes()))
    (upright,) = decode_one(path).run()
    (stored,) = decode_one(path, adjust_orientation=False).run()
    assert upright.at(0).shape == (64, 48, 3) and stored.at(0).shape == (48, 64, 3)


def test_decompression_bomb_limit_is_configurable(tmp_path):
    path = tmp_path / "big.png"
    path.write_bytes(png_bomb(3000, 2000))  # 6 Mpx of zeros in a few KB
    with pytest.raises(OperatorError, match=r"3000x2000 = 6,000,000 pixels is over the decoder's"):
        decode_one(path, max_pixels=5_000_000).run()
    (image,) = decode_one(path, max_pixels=6_000_000).run()
    assert image.at(0).shape == (2000, 3000, 3)
    # JPEGs are refused from their header too, before any decoding, on either back end.
    jpeg = tmp_path / "big.jpg"
    jpeg.write_bytes(_save(Image.new("RGB", (300, 200)), "JPEG"))
    with pytest.raises(OperatorError, match="300x200 = 60,000 pixels"):
        decode_one(jpeg, max_pixels=50_000).run()
    with pytest.raises(ArgumentError, match="max_pixels"):
        fn.decoders.image(max_pixels=0)


def test_unreadable_file_names_it_permission_denied(photo_bytes):
    """A file the user may not read. Root reads everything, so as root the pipeline runs in
    a forked child that has become 'nobody' (augkit is already imported there)."""
    with tempfile.TemporaryDirectory() as folder:  # pytest's tmp_path is root's alone
        os.chmod(folder, 0o755)
        unreadable_file(pathlib.Path(folder), photo_bytes)


def unreadable_file(tmp_path: pathlib.Path, photo_bytes: bytes) -> None:
    (tmp_path / "cls").mkdir()
    (tmp_path / "cls" / "a.jpg").write_bytes(photo_bytes)
    (tmp_path / "cls" / "locked.jpg").write_bytes(photo_bytes)
    (tmp_path / "cls" / "locked.jpg").chmod(0)
    pipe = Pipeline(batch_size=2, num_threads=1, device_id=None, seed=1, exec_async=False)
    with pipe:
        jpegs, _ = fn.readers.file(file_root=str(tmp_path), name="Reader")
        pipe.set_outputs(fn.decoders.image(jpegs))
    pipe.build()  # lists the files as root
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report the message through the pipe, never return to pytest
        try:
            if os.geteuid() == 0:
                os.setuid(65534)
            try:
                pipe.run()
                message = "no error"
            except Exception as exc:
                message = f"{type(exc).__name__} {exc}"
            os.write(write, message.encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read) as f:
        message = f.read()
    os.waitpid(pid, 0)
    assert message.startswith(
        f"OperatorError operator Reader, sample #1 (cls/locked.jpg): cannot read file "
        f"'{tmp_path}/cls/locked.jpg': Permission denied"
    ), message


def test_a_dangling_link_names_the_file(tmp_path, photo_bytes):
    (tmp_path / "cls").mkdir()
    (tmp_path / "cls" / "a.jpg").write_bytes(photo_bytes)
    (tmp_path / "cls" / "b.jpg").symlink_to(tmp_path / "nowhere.jpg")
    pipe = Pipeline(batch_size=2, num_threads=1, device_id=None, seed=1)
    with pipe:
        jpegs, _ = fn.readers.file(file_root=str(tmp_path), name="Reader")
        pipe.set_outputs(fn.decoders.image(jpegs))
    with pytest.raises(OperatorError, match=r"sample #1 \(cls/b.jpg\): cannot read file .*"):
        pipe.run()


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda root: {"file_root": str(root / "missing")}, "does not exist or is not a folder"),
        (lambda root: {"file_root": str(root / "empty")}, "No files found in"),
        (
            lambda root: {"files": [str(root / "cls" / "a.jpg"), str(root / "cls" / "gone.jpg")]},
            "1 of the 2 files in files do not exist or are not files: '",
        ),
        (
            lambda root: {"file_list": str(root / "list.txt")},
            "2 of the 3 files in file_list",
        ),
    ],
    ids=["file_root missing", "file_root empty", "missing in files", "missing in file_list"],
)
def test_missing_files_and_folders_are_build_errors(tmp_path, photo_bytes, make, message):
    (tmp_path / "cls").mkdir()
    (tmp_path / "empty" / "cls").mkdir(parents=True)
    (tmp_path / "cls" / "a.jpg").write_bytes(photo_bytes)
    (tmp_path / "list.txt").write_text("cls/a.jpg 0\ncls/gone.jpg 1\ncls 2\n")
    pipe = Pipeline(batch_size=1, num_threads=1, device_id=None)
    with pipe:
        jpegs, _ = fn.readers.file(name="Reader", **make(tmp_path))
        pipe.set_outputs(jpegs)
    with pytest.raises(ArgumentError, match="Reader: ") as info:
        pipe.build()
    assert message in str(info.value)


# --- on_error="skip" ------------------------------------------------------------------------

GOOD = ["a.jpg", "c.png", "e.jpg", "f.jpg", "h.jpg", "i.jpg"]
BAD = {
    "b.jpg": "truncated image data",
    "d.jpg": "the data is empty",
    "g.jpg": "not a recognised image format",
    "j.jpg": "truncated image data",
}


@pytest.fixture()
def mixed_root(tmp_path, photo_paths, photo_bytes):
    """Two classes: good photos, a PNG, and four bad files, the last one of 'pets' bad."""
    small = Image.open(photo_paths[1]).convert("RGB").resize((40, 30))
    contents = {
        "a.jpg": photo_paths[2].read_bytes(),
        "b.jpg": photo_bytes[:2000],
        "c.png": _save(small, "PNG"),
        "d.jpg": b"",
        "e.jpg": photo_paths[3].read_bytes(),
        "f.jpg": photo_paths[4].read_bytes(),
        "g.jpg": b"\x00" * 300,
        "h.jpg": photo_paths[5].read_bytes(),
        "i.jpg": photo_paths[6].read_bytes(),
        "j.jpg": _header_only(photo_bytes),
    }
    for name, data in contents.items():
        folder = tmp_path / ("cats" if name < "f" else "pets")
        folder.mkdir(exist_ok=True)
        (folder / name).write_bytes(data)
    return tmp_path


def label_of(name: str) -> int:
    return 0 if name.split("/")[-1] < "f" else 1


def skipping(root, batch_size=3, shuffle=False, **settings):
    @pipeline_def(batch_size=batch_size, num_threads=2, device_id=None, seed=5, **settings)
    def pipe():
        jpegs, labels = fn.readers.file(file_root=str(root), random_shuffle=shuffle, name="Reader")
        images = fn.decoders.image(jpegs, on_error="skip", name="Decoder")
        return images, labels, jpegs

    return pipe()


def delivered(pipe, iterations):
    names = []
    with pytest.warns(SkippedSampleWarning) as caught:
        for _ in range(iterations):
            images, labels, jpegs = pipe.run()
            assert images.source_info() == labels.source_info() == jpegs.source_info()
            assert [int(x[0]) for x in labels.as_array()] == [
                label_of(n) for n in images.source_info()
            ]
            for k, name in enumerate(images.source_info()):
                want = np.asarray(Image.open(io.BytesIO(jpegs.at(k).tobytes())).convert("RGB"))
                assert np.abs(images.at(k).astype(int) - want.astype(int)).mean() < 0.5, name
            names += images.source_info()
    return names, [str(w.message) for w in caught]


MODES = {
    "synchronous": {"exec_async": False, "exec_pipelined": False},
    "prefetching": {},
    "debug": {"debug": True},
}


@pytest.mark.parametrize("mode", MODES)
def test_skip_keeps_batches_full_and_reports_every_skip(mixed_root, mode):
    pipe = skipping(mixed_root, **MODES[mode])
    names, warned = delivered(pipe, 4)  # 12 good samples: two epochs of 6
    good = [f"{'cats' if n < 'f' else 'pets'}/{n}" for n in GOOD]
    assert names == good + good
    skipped = [(s.source_info, s.operator, s.reader) for s in pipe.skipped]
    bad = [f"{'cats' if n < 'f' else 'pets'}/{n}" for n in BAD]
    # The second epoch's last file (pets/j.jpg) is not read yet: the batch was full before it.
    assert skipped == [(n, "Decoder", "Reader") for n in bad + bad[:-1]]
    for record, reason in zip(pipe.skipped, list(BAD.values()) * 2, strict=False):
        assert reason in record.reason
        assert record.path == str(mixed_root / record.source_info)
    assert len(warned) == 7
    assert warned[0].startswith(f"Decoder skipped {mixed_root}/cats/b.jpg (iteration 0): trunc")
    assert warned[0].endswith("replaced by the next sample (all skips: Pipeline.skipped)")


def test_skip_gives_the_same_batches_in_every_mode_with_shuffling(mixed_root):
    runs = {}
    for mode, settings in MODES.items():
        pipe = skipping(mixed_root, batch_size=4, shuffle=True, **settings)
        runs[mode] = delivered(pipe, 6)[0]
        # Each epoch (6 good samples) is every good file once.
        for epoch in range(4):
            chunk = runs[mode][6 * epoch : 6 * epoch + 6]
            assert sorted(n.split("/")[1] for n in chunk) == GOOD
    assert runs["synchronous"] == runs["prefetching"] == runs["debug"]
    assert runs["synchronous"][:6] != sorted(runs["synchronous"][:6])  # shuffled


@pytest.mark.parametrize("mode", ["synchronous", "debug"])
def test_partial_and_padded_last_batches(mixed_root, mode):
    pipe = skipping(mixed_root, batch_size=4, **MODES[mode])
    with pytest.warns(SkippedSampleWarning):
        sizes = [len(batch[0]) for batch in pipe.epoch(last_batch_policy="partial")]
    assert sizes == [4, 2]

    @pipeline_def(batch_size=4, num_threads=2, device_id=None, seed=5, **MODES[mode])
    def padded():
        jpegs, _ = fn.readers.file(file_root=str(mixed_root), pad_last_batch=True)
        return (fn.decoders.image(jpegs, on_error="skip"),)

    with pytest.warns(SkippedSampleWarning):
        pipe = padded()
        first, second = pipe.run()[0], pipe.run()[0]
    # The epoch's last file (pets/j.jpg) is bad: the padding repeats the last good one.
    assert first.source_info() == ["cats/a.jpg", "cats/c.png", "cats/e.jpg", "pets/f.jpg"]
    assert second.source_info() == ["pets/h.jpg", "pets/i.jpg", "pets/i.jpg", "pets/i.jpg"]


def test_a_data_set_with_no_good_file_stops_with_an_error(tmp_path):
    (tmp_path / "cls").mkdir()
    for k in range(3):
        (tmp_path / "cls" / f"{k}.jpg").write_bytes(b"junk")
    pipe = Pipeline(batch_size=2, num_threads=1, device_id=None, seed=1)
    with pipe:
        jpegs, _ = fn.readers.file(file_root=str(tmp_path))
        pipe.set_outputs(fn.decoders.image(jpegs, on_error="skip", name="Decoder"))
    with pytest.raises(OperatorError, match="every one of the last 4 samples was skipped"):
        pipe.run()


def test_skip_also_covers_files_that_cannot_be_read(tmp_path, photo_bytes):
    (tmp_path / "cls").mkdir()
    (tmp_path / "cls" / "a.jpg").write_bytes(photo_bytes)
    (tmp_path / "cls" / "b.jpg").symlink_to(tmp_path / "nowhere.jpg")
    (tmp_path / "cls" / "c.jpg").write_bytes(photo_bytes)
    pipe = skipping(tmp_path, batch_size=2, **MODES["synchronous"])
    with pytest.warns(SkippedSampleWarning, match="cannot read file: No such file"):
        images = pipe.run()[0]
    assert images.source_info() == ["cls/a.jpg", "cls/c.jpg"]
    assert pipe.skipped[0].operator == "Reader"


def test_skip_needs_a_reader_in_a_pipeline():
    pipe = Pipeline(batch_size=1, num_threads=1, device_id=None)
    with pipe:
        data = fn.external_source(source=lambda: [np.zeros(4, np.uint8)], name="Source")
        pipe.set_outputs(fn.decoders.image(data, on_error="skip", name="Decoder"))
    with pytest.raises(ArgumentError, match="Decoder: on_error='skip' needs its input to come"):
        pipe.build()


def test_eager_skip_leaves_bad_samples_out_and_warns(photo_bytes):
    good = np.frombuffer(photo_bytes, np.uint8)
    with pytest.warns(SkippedSampleWarning, match="left out of the batch"):
        images = eager.decoders.image([good, np.zeros(5, np.uint8), good], on_error="skip")
    assert len(images) == 2
    with pytest.raises(OperatorError, match="not a recognised image format"):
        eager.decoders.image(np.zeros(5, np.uint8), on_error="skip")
    assert eager.decoders.image(good, output_type=types.GRAY).shape[2] == 1


def test_skip_records_are_reported_once_per_delivered_batch(mixed_root):
    pipe = skipping(mixed_root)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SkippedSampleWarning)
        pipe.run()
        pipe.reset()  # drops batches read ahead: their skips are reported when delivered
        pipe.run()
    assert [s.source_info for s in pipe.skipped] == ["cats/b.jpg", "cats/d.jpg"] * 2


def test_corrupt_exif_decodes_as_stored_without_a_warning(tmp_path):
    """Pillow warns about EXIF tags it cannot read; the image is fine, so the decoder keeps it
    as stored and the user sees no warning (checked in a fresh interpreter: pytest's own
    warning filters would hide the difference)."""
    tiff = b"II*\x00" + struct.pack("<IH", 8, 1) + struct.pack("<HHIII", 0x010F, 2, 100, 1000, 0)
    path = tmp_path / "bad_exif.jpg"
    path.write_bytes(
        _save(Image.new("RGB", (16, 8), (200, 10, 10)), "JPEG", exif=b"Exif\0\0" + tiff)
    )
    code = (
        "import numpy as np\n"
        "from augkit.operators.decoders import jpeg, image\n"
        "jpeg.BACKEND = 'pillow'\n"
        f"print(image.decode_image(np.fromfile({str(path)!r}, np.uint8)).shape)\n"
    )
    result = subprocess.run(
        [sys.executable, "-W", "default", "-c", code], capture_output=True, text=True, timeout=120
    )
    assert result.stdout.strip() == "(8, 16, 3)" and result.stderr == "", result.stderr


def test_partial_epochs_of_a_skipping_and_a_plain_reader_say_why_they_disagree(
    mixed_root, photo_paths
):
    other = mixed_root / "other"
    (other / "cls").mkdir(parents=True)
    for path in photo_paths[:10]:  # as many files as mixed_root, all good
        (other / "cls" / path.name).write_bytes(path.read_bytes())

    @pipeline_def(batch_size=4, num_threads=1, device_id=None, seed=5)
    def two_readers():
        jpegs, _ = fn.readers.file(file_root=str(mixed_root), dir_filters=["cats", "pets"])
        more, _ = fn.readers.file(file_root=str(other))
        return fn.decoders.image(jpegs, on_error="skip"), fn.decoders.image(more)

    with pytest.warns(SkippedSampleWarning), pytest.raises(GraphError, match="on_error='skip'"):
        list(two_readers().epoch(last_batch_policy="partial"))


def test_rerun_does_not_report_the_last_batch_skips_again(mixed_root):
    pipe = skipping(mixed_root, **MODES["synchronous"])
    with pytest.warns(SkippedSampleWarning):
        pipe.run()
    with warnings.catch_warnings():
        warnings.simplefilter("error", SkippedSampleWarning)
        pipe.rerun()
        pipe.rerun(["Decoder"])
    assert [s.source_info for s in pipe.skipped] == ["cats/b.jpg", "cats/d.jpg"]
