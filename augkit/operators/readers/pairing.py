"""The build-time check of readers used as pairs: DALI's segmentation idiom made safe.

DALI's way to read images with their masks is two ``fn.readers.file`` (one over the images,
one over the masks) given the same ``seed``: each sample of one is the partner of the same
sample of the other only as long as both list their files in the same order and walk them
with the same arguments. Nothing says so when they do not: a different seed, one reader
sharded and not the other, a missing mask that shifts every later pair... and the network
trains on wrong masks. ``check_pairing(readers)``, run by ``Pipeline.build()`` with the
pipeline's readers, warns (``ReaderPairingWarning``) where that can happen.

The rule. Two readers look paired when their samples' names match by relative path without
extension ("animals/cat.jpg" and "animals/cat.png"), or by file name without extension
("images/cat.jpg" and "masks/cat.png", for ``files=`` lists), for at least 80% of the samples
(counted with repeats; the key that matches more is used). Two readers of the very same files
(a second reader for mixup) are no pair. Readers that look paired get one warning per pair,
naming both, when:

- their sample counts differ (a missing partner: every pair after it is shifted), naming a
  sample the other lacks;
- they have the same count but only part of the names match, naming the first mismatching
  pair (sample k of one read with sample k of the other);
- the names match but in a different order, naming the first pair out of order;
- their order can differ: ``random_shuffle``, ``shuffle_after_epoch``, ``shard_id``,
  ``num_shards``, ``stick_to_shard`` or ``pad_last_batch`` differ; with ``random_shuffle`` on
  both, their seeds differ (the pipeline's seed gives each reader a seed of its own unless the
  same ``seed=`` is given to both) or ``initial_fill`` differs (no effect in augkit, which
  shuffles whole shards, but DALI's order depends on its shuffle buffer); with
  ``shuffle_after_epoch`` on both, ``shuffle_after_epoch_seed`` differs (the reader seed does
  not matter there: both augkit and DALI permute with one data-set-wide key).

Each warning says the fix: the same ``seed=`` and reader arguments on both, or one
``fn.readers.image_mask(file_root=..., mask_root=...)``, which cannot split a pair.

It only warns: a pipeline that reads two data sets of matching names on purpose (a paired
style transfer with different shuffles, say) still runs; ``warnings.filterwarnings("ignore",
category=ReaderPairingWarning)`` silences it. Readers without names (not yet opened) are left
out.
"""

from __future__ import annotations

import warnings
from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any

PAIRED_FRACTION = 0.8
"""The share of samples whose names must match for two readers to look paired."""

_ORDER_ARGS = (
    "random_shuffle",
    "shuffle_after_epoch",
    "shard_id",
    "num_shards",
    "stick_to_shard",
    "pad_last_batch",
)


class ReaderPairingWarning(UserWarning):
    """Two readers look like a pair (images and their masks) but may not stay paired."""


def path_stem(name: str) -> str:
    """The relative path without its extension: "animals/cat.jpg" -> "animals/cat"."""
    name = name.replace("\\", "/")
    folder, _, base = name.rpartition("/")
    if "." in base.lstrip("."):
        base = base.rsplit(".", 1)[0]
    return f"{folder}/{base}" if folder else base


def name_stem(name: str) -> str:
    """The file name without its extension: "masks/cat.png" -> "cat"."""
    return path_stem(name).rpartition("/")[2]


def _names(reader: Any) -> list[str] | None:
    names = getattr(reader, "_names", None)
    return list(names) if names is not None else None


def _paths(reader: Any, count: int) -> list[str] | None:
    path_of = getattr(reader, "path_of", None)
    if path_of is None:
        return None
    paths = [path_of(i) for i in range(count)]
    return paths if all(paths) else None


def _best_key(a: list[str], b: list[str]) -> tuple[Callable[[str], str], str, float]:
    """The key under which the names of ``a`` and ``b`` match best, its name and the share of
    samples that match (counted with repeats, over the larger reader)."""
    best: tuple[Callable[[str], str], str, float] = (path_stem, "", 0.0)
    for key, how in (
        (path_stem, "relative path without extension"),
        (name_stem, "file name without extension"),
    ):
        common = Counter(map(key, a)) & Counter(map(key, b))
        share = sum(common.values()) / max(len(a), len(b))
        if share > best[2]:
            best = (key, how, share)
    return best


def _arguments(first: Any, second: Any) -> list[str]:
    """What in the two readers' arguments (and seeds) can give them different orders."""
    a, b = first.args, second.args
    found = []
    for arg in _ORDER_ARGS:
        if a.get(arg) != b.get(arg):
            found.append(
                f"{arg} differs ({first.name}: {a.get(arg)!r}, {second.name}: {b.get(arg)!r})"
            )
    if a.get("random_shuffle") and b.get("random_shuffle"):
        if first.seed != second.seed:
            found.append(
                f"their seeds differ ({first.name}: {first.seed}, {second.name}: {second.seed}): "
                f"random_shuffle draws each reader's order from its own seed, and the "
                f"pipeline's seed gives each reader a different one unless the same seed= is "
                f"given to both"
            )
        if a.get("initial_fill") != b.get("initial_fill"):
            found.append(
                f"initial_fill differs ({first.name}: {a.get('initial_fill')}, {second.name}: "
                f"{b.get('initial_fill')}): no effect in augkit, but in DALI the shuffle "
                f"buffer's size changes the order"
            )
    if (
        a.get("shuffle_after_epoch")
        and b.get("shuffle_after_epoch")
        and a.get("shuffle_after_epoch_seed") != b.get("shuffle_after_epoch_seed")
    ):
        found.append(
            f"shuffle_after_epoch_seed differs ({first.name}: "
            f"{a.get('shuffle_after_epoch_seed')!r}, {second.name}: "
            f"{b.get('shuffle_after_epoch_seed')!r})"
        )
    return found


def _samples(first: Any, a: list[str], second: Any, b: list[str], key: Any) -> list[str]:
    """What in the two readers' lists of samples breaks the pairs."""
    ka, kb = [key(n) for n in a], [key(n) for n in b]
    if len(a) != len(b):
        longer, shorter, lk, sk = (
            (first, second, ka, kb) if len(a) > len(b) else (second, first, kb, ka)
        )
        names = a if longer is first else b
        lacking = Counter(lk) - Counter(sk)
        k = next(i for i, s in enumerate(lk) if lacking.get(s))
        return [
            f"their sample counts differ ({first.name}: {len(a)}, {second.name}: {len(b)}): "
            f"{shorter.name} has no partner for {names[k]!r} of {longer.name}, so every pair "
            f"after it is shifted"
        ]
    if Counter(ka) != Counter(kb):
        k = next(i for i in range(len(ka)) if ka[i] != kb[i])
        unmatched = sum((Counter(ka) - Counter(kb)).values())
        return [
            f"{unmatched} of their {len(a)} samples have no partner of the same name; sample "
            f"{k} pairs {a[k]!r} ({first.name}) with {b[k]!r} ({second.name})"
        ]
    if ka != kb:
        k = next(i for i in range(len(ka)) if ka[i] != kb[i])
        return [
            f"they list the same names in a different order: sample {k} pairs {a[k]!r} "
            f"({first.name}) with {b[k]!r} ({second.name})"
        ]
    return []


def pairing_problems(first: Any, second: Any) -> str:
    """Why two opened readers that look paired may not stay paired, in words ("" when they
    do not look paired, or stay paired)."""
    a, b = _names(first), _names(second)
    if not a or not b:
        return ""
    key, how, share = _best_key(a, b)
    if share < PAIRED_FRACTION:
        return ""
    pa, pb = _paths(first, len(a)), _paths(second, len(b))
    if pa is not None and pb is not None and sorted(pa) == sorted(pb):
        return ""  # the same files: a second reader of one data set, not a pair
    problems = _samples(first, a, second, b, key) + _arguments(first, second)
    if not problems:
        return ""
    return (
        f"readers {first.name!r} and {second.name!r} look like a pair ({share:.0%} of their "
        f"samples match by {how}) but may not stay paired: {'; '.join(problems)}. Fix: give "
        f"both the same seed= and the same reader arguments over files listed in the same "
        f"order, or read images and masks with one fn.readers.image_mask(file_root=..., "
        f"mask_root=...), which cannot split a pair"
    )


def check_pairing(readers: Mapping[str, Any], stacklevel: int = 2) -> None:
    """Warn (``ReaderPairingWarning``) for each two of ``readers`` (name -> opened reader
    operator) that look paired but may not stay paired (the rule: the module docstring).

    Example:
        >>> check_pairing({})
    """
    items = list(readers.values())
    for i, first in enumerate(items):
        for second in items[i + 1 :]:
            message = pairing_problems(first, second)
            if message:
                warnings.warn(message, ReaderPairingWarning, stacklevel=stacklevel + 1)
