"""fn.readers.image_mask: the real photos of data/images with masks derived from them (their
grey levels in bands, written into tmp_path): every sample's mask is its own image's, by name
and by content, under shuffling, sharding, padding and epochs; unpaired files are reported at
build; a mask that cannot be read is named."""

from __future__ import annotations

import os
import pathlib
import shutil

import numpy as np
import pytest
from PIL import Image

from augkit import fn, kinds, pipeline_def
from augkit.errors import ArgumentError, OperatorError
from augkit.operators.readers.pairing import path_stem

CLASSES = 6


def label_map(grey: np.ndarray) -> np.ndarray:
    return (grey.astype(np.int32) * CLASSES // 256).astype(np.uint8)


def write_mask(path: pathlib.Path, photo: pathlib.Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    image = Image.fromarray(label_map(np.asarray(Image.open(photo).convert("L"))), "P")
    image.putpalette([v for k in range(256) for v in (k * 40 % 256, 255 - k, k * 7 % 256)])
    image.save(path)


@pytest.fixture
def masks(tmp_path, image_dir, photo_paths) -> pathlib.Path:
    """A mask (palette PNG) for each photo of data/images, laid out as data/images."""
    root = tmp_path / "masks"
    for photo in photo_paths:
        write_mask(root / photo.relative_to(image_dir).with_suffix(".png"), photo)
    return root


def _pipe(batch_size: int = 4, decode: bool = True, seed: int = 3, **kwargs):
    @pipeline_def(batch_size=batch_size, num_threads=2, device_id=None, seed=seed)
    def pairs():
        images, masks = fn.readers.image_mask(name="Pairs", **kwargs)
        if decode:
            return fn.decoders.image(images), fn.decoders.mask(masks)
        return images, masks

    return pairs()


def _check_pairs(images, masks) -> list[str]:
    """Assert that each sample's mask is its image's, by name and by content; the names."""
    names = []
    for k in range(len(images)):
        name = images[k].source_info()
        assert masks[k].source_info() == name
        grey = np.asarray(Image.fromarray(images.at(k)).convert("L"))
        np.testing.assert_array_equal(masks.at(k)[..., 0], label_map(grey), err_msg=name)
        names.append(name)
    return names


def test_pairs_of_real_photos(image_dir, masks, photo_paths):
    pipe = _pipe(file_root=str(image_dir), mask_root=str(masks))
    assert pipe.epoch_size("Pairs") == len(photo_paths) == 15
    expected = sorted(p.relative_to(image_dir).as_posix() for p in photo_paths)
    batches = list(pipe.epoch("partial"))
    assert all(i.kind == kinds.IMAGE and m.kind == kinds.MASK for i, m in batches)
    assert [n for batch in batches for n in _check_pairs(*batch)] == expected  # sorted order


def test_outputs_are_the_files_bytes(image_dir, masks):
    images, mask_bytes = _pipe(decode=False, file_root=str(image_dir), mask_root=str(masks)).run()
    for k in range(len(images)):
        name = images[k].source_info()
        assert images.at(k).tobytes() == (image_dir / name).read_bytes()
        stem = pathlib.Path(name).with_suffix(".png")
        assert mask_bytes.at(k).tobytes() == (masks / stem).read_bytes()
        assert images.at(k).ndim == 1 and images.at(k).dtype == np.uint8


def test_shuffled_pairs_stay_paired_over_epochs(image_dir, masks):
    pipe = _pipe(file_root=str(image_dir), mask_root=str(masks), random_shuffle=True)
    orders = []
    for _ in range(3):
        orders.append([n for batch in pipe.epoch("partial") for n in _check_pairs(*batch)])
        assert sorted(orders[-1]) == sorted(orders[0])
    assert orders[0] != orders[1]  # shuffled, and differently each epoch


@pytest.mark.parametrize(
    "args",
    [
        {"random_shuffle": True},
        {"random_shuffle": True, "stick_to_shard": True, "pad_last_batch": True},
        {"shuffle_after_epoch": True},
    ],
    ids=["shuffle", "stick-pad", "after-epoch"],
)
def test_shards_cover_the_data_set_once_and_stay_paired(image_dir, masks, args):
    shards = []
    for shard in range(3):
        pipe = _pipe(
            batch_size=2,
            file_root=str(image_dir),
            mask_root=str(masks),
            num_shards=3,
            shard_id=shard,
            **args,
        )
        shards.append([n for batch in pipe.epoch("partial") for n in _check_pairs(*batch)])
        for _ in range(2):  # more epochs: rotated or kept shards, still paired
            list(pipe.epoch("partial"))
            for batch in pipe.epoch("fill"):
                _check_pairs(*batch)
    names = [n for s in shards for n in s]
    assert len(set(names)) == 15 and len(names) == 15


def test_full_batches_across_the_end_of_an_epoch_stay_paired(image_dir, masks):
    pipe = _pipe(batch_size=4, file_root=str(image_dir), mask_root=str(masks), random_shuffle=True)
    for _ in range(8):  # 32 samples: past two epoch ends, inside batches
        _check_pairs(*pipe.run())


def test_files_list_in_its_order(image_dir, masks):
    files = ["people/cameraman.jpg", "animals/chelsea_cat.jpg"]
    pipe = _pipe(batch_size=2, file_root=str(image_dir), mask_root=str(masks), files=files)
    assert _check_pairs(*pipe.run()) == files


# --- where the masks are ---------------------------------------------------------------------


def _tree(root: pathlib.Path, photo_paths, image_dir, mask_dir: pathlib.Path) -> None:
    for photo in photo_paths[:4]:
        rel = photo.relative_to(image_dir)
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(photo, root / rel)
        write_mask((mask_dir / rel).with_suffix(".png"), photo)


def test_masks_beside_their_images(tmp_path, image_dir, photo_paths):
    _tree(tmp_path, photo_paths, image_dir, tmp_path)
    pipe = _pipe(batch_size=4, file_root=str(tmp_path), mask_root=str(tmp_path))
    assert pipe.epoch_size("Pairs") == 4
    names = _check_pairs(*pipe.run())
    assert all(n.endswith(".jpg") for n in names)


def test_masks_in_a_folder_inside_file_root(tmp_path, image_dir, photo_paths):
    _tree(tmp_path, photo_paths, image_dir, tmp_path / "masks")
    pipe = _pipe(batch_size=4, file_root=str(tmp_path), mask_root=str(tmp_path / "masks"))
    assert pipe.epoch_size("Pairs") == 4
    assert not any(n.startswith("masks/") for n in _check_pairs(*pipe.run()))


def test_another_mask_extension(tmp_path, image_dir, photo_paths):
    photo = photo_paths[0]
    rel = photo.relative_to(image_dir)
    write_mask(tmp_path / "m.png", photo)
    (tmp_path / rel).parent.mkdir(parents=True)
    Image.open(tmp_path / "m.png").save((tmp_path / rel).with_suffix(".tif"))
    args = {"file_root": str(image_dir), "mask_root": str(tmp_path), "mask_extension": ".tif"}
    with pytest.raises(ArgumentError, match=r"14 of the 15 images have no mask .*\.tif\)"):
        _pipe(**args).build()
    pipe = _pipe(batch_size=1, files=[str(rel)], **args)
    assert _check_pairs(*pipe.run()) == [rel.as_posix()]


# --- unpaired files --------------------------------------------------------------------------


def test_images_without_masks_are_named_and_counted(image_dir, masks, photo_paths):
    for photo in photo_paths[:7]:
        os.remove((masks / photo.relative_to(image_dir)).with_suffix(".png"))
    pipe = _pipe(file_root=str(image_dir), mask_root=str(masks))
    with pytest.raises(ArgumentError) as info:
        pipe.build()
    message = str(info.value)
    assert "Pairs" in message and "7 of the 15 images have no mask" in message
    first = [p.relative_to(image_dir).as_posix() for p in photo_paths[:5]]
    assert all(repr(n) in message for n in first) and "and 2 more" in message
    assert "missing='skip'" in message

    pipe = _pipe(file_root=str(image_dir), mask_root=str(masks), missing="skip")
    assert pipe.epoch_size("Pairs") == 8
    kept = [n for batch in pipe.epoch("partial") for n in _check_pairs(*batch)]
    assert sorted(kept) == sorted(p.relative_to(image_dir).as_posix() for p in photo_paths[7:])


def test_masks_without_images_are_named(image_dir, masks, photo_paths):
    write_mask(masks / "animals" / "dog.png", photo_paths[0])
    with pytest.raises(ArgumentError, match=r"1 masks have no image: 'animals/dog\.png'"):
        _pipe(file_root=str(image_dir), mask_root=str(masks)).build()
    pipe = _pipe(file_root=str(image_dir), mask_root=str(masks), missing="skip")
    assert pipe.epoch_size("Pairs") == 15


def test_a_files_list_with_an_image_without_mask(image_dir, masks):
    os.remove(masks / "people" / "cameraman.png")
    files = ["people/cameraman.jpg", "animals/chelsea_cat.jpg"]
    with pytest.raises(ArgumentError, match=r"1 of the 2 images have no mask.*cameraman"):
        _pipe(file_root=str(image_dir), mask_root=str(masks), files=files).build()
    with pytest.raises(ArgumentError, match=r"do not exist under file_root.*'no/such\.jpg'"):
        _pipe(file_root=str(image_dir), mask_root=str(masks), files=["no/such.jpg"]).build()
    absolute = [str(image_dir / "people" / "cameraman.jpg")]
    with pytest.raises(ArgumentError, match=r"relative to file_root, got absolute ones"):
        _pipe(file_root=str(image_dir), mask_root=str(masks), files=absolute).build()


def test_two_images_of_one_stem_are_refused(tmp_path, image_dir, photo_paths):
    _tree(tmp_path / "img", photo_paths, image_dir, tmp_path / "msk")
    rel = photo_paths[0].relative_to(image_dir)
    shutil.copy(photo_paths[0], (tmp_path / "img" / rel).with_suffix(".jpeg"))
    with pytest.raises(ArgumentError, match=r"same path without extension.*share the mask"):
        _pipe(file_root=str(tmp_path / "img"), mask_root=str(tmp_path / "msk")).build()


def test_nothing_paired_and_bad_folders(tmp_path, image_dir):
    (tmp_path / "empty").mkdir()
    with pytest.raises(ArgumentError, match=r"no image under file_root .* has a mask"):
        _pipe(file_root=str(image_dir), mask_root=str(tmp_path / "empty"), missing="skip").build()
    with pytest.raises(ArgumentError, match=r"mask_root .* does not exist"):
        _pipe(file_root=str(image_dir), mask_root=str(tmp_path / "nowhere")).build()
    with pytest.raises(ArgumentError, match=r"no images found under file_root"):
        _pipe(file_root=str(tmp_path / "empty"), mask_root=str(tmp_path / "empty")).build()


@pytest.mark.parametrize(
    ("args", "words"),
    [
        ({"mask_extension": "png"}, "a file extension such as '.png'"),
        ({"missing": "ignore"}, "one of 'error', 'skip'"),
        ({"file_root": 3}, "expected a path"),
    ],
)
def test_bad_arguments(args, words):
    with pytest.raises(ArgumentError, match=r"readers\.ImageMask") as info:
        fn.readers.image_mask(**{"file_root": "a", "mask_root": "b", **args})
    assert words in str(info.value)


def test_both_roots_are_required():
    with pytest.raises(ArgumentError, match="mask_root"):
        fn.readers.image_mask(file_root="a")


# --- reading -------------------------------------------------------------------------------


def test_a_mask_that_cannot_be_read_is_named_and_read_again(image_dir, masks):
    pipe = _pipe(batch_size=2, file_root=str(image_dir), mask_root=str(masks))
    pipe.build()
    mask = masks / "animals" / "chelsea_cat.png"
    kept = mask.read_bytes()
    mask.unlink()
    with pytest.raises(OperatorError) as info:
        pipe.run()
    message = str(info.value)
    assert "animals/chelsea_cat.jpg" in message and str(mask) in message, message
    mask.write_bytes(kept)
    assert _check_pairs(*pipe.run())[0] == "animals/chelsea_cat.jpg"


def test_stems_match_for_every_sample_of_many_epochs(image_dir, masks):
    pipe = _pipe(
        batch_size=3,
        decode=False,
        file_root=str(image_dir),
        mask_root=str(masks),
        random_shuffle=True,
        pad_last_batch=True,
    )
    for _ in range(20):
        images, mask_bytes = pipe.run()
        for k in range(len(images)):
            expected = (masks / f"{path_stem(images[k].source_info())}.png").read_bytes()
            assert mask_bytes.at(k).tobytes() == expected
