"""``fn.readers.file`` / ``ops.readers.File`` (legacy ``ops.FileReader``): files from disk as
raw bytes, with an integer label, as DALI's file reader gives them.

Where the files come from (checked when the pipeline is built):

- ``file_root`` alone: every immediate subfolder of ``file_root`` is a class, numbered in the
  sorted order of the folder names (bytewise, as ``std::sort``); the files of each folder that
  match ``file_filters`` (fnmatch, case-insensitive unless ``case_sensitive_filter``) are taken in
  sorted order, folder after folder. Files lying directly in ``file_root`` are ignored, and there
  is no recursion, as in DALI. ``source_info`` is ``"<folder>/<file>"``.
- ``file_list``: a text file of ``path label`` lines, parsed from the right (so a path may hold
  spaces); the label is required. Paths are relative to ``file_root`` when it is given, else to
  the list's own folder.
- ``files`` (with ``labels``, or without: then the label is the file's index in ``files``).

In the last two modes ``source_info`` is the path as it was written.

Sharding, shuffling, padding and epochs are every reader's (``readers/cursor.py``: DALI's
shards and rotation, augkit's shuffle rule); so is ``on_error="skip"`` of a decoder that reads
from it (``readers/base.py``).

Files are read when their batch is made, in the pipeline's threads. A file that cannot be read
raises ``OperatorError`` naming it; the reader then stays where it was, so once the file is back
the same batch is read again.

Example:
    >>> from augkit import fn, pipeline_def
    >>> @pipeline_def(batch_size=4, num_threads=2, device_id=None, seed=1)
    ... def files():
    ...     jpegs, labels = fn.readers.file(file_root="data/images", random_shuffle=True)
    ...     return jpegs, labels
"""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from augkit import kinds
from augkit.operators.base import finish
from augkit.operators.readers.base import READER_ARGS, Reader, listed
from augkit.operators.registry import (
    Arg,
    OperatorSchema,
    OutputSpec,
    fixed_kinds,
    register,
    to_bool,
    to_ints,
)

IMAGE_FILE_FILTERS = (
    "*.jpg",
    "*.jpeg",
    "*.png",
    "*.bmp",
    "*.tif",
    "*.tiff",
    "*.pnm",
    "*.ppm",
    "*.pgm",
    "*.pbm",
    "*.jp2",
    "*.webp",
)
# DALI's default file_filters: the image formats, then audio.
DEFAULT_FILE_FILTERS = (*IMAGE_FILE_FILTERS, "*.flac", "*.ogg", "*.wav")

_INT32 = np.iinfo(np.int32)

# What the outputs are, for the checks made at build (augkit.static_checks).
ENCODED_BYTES = OutputSpec(
    kind=kinds.ENCODED,
    ndim=1,
    layout="",
    what="1-D encoded bytes from readers.file",
    hint="decode them first with fn.decoders.image",
)
LABELS = OutputSpec(
    kind=kinds.LABELS,
    ndim=1,
    layout="",
    what="labels of shape (1,) from readers.file",
    hint=(
        "labels are not images: use the reader's first output "
        "(jpegs, labels = fn.readers.file(...))"
    ),
)

_LIST_LINE = re.compile(r"^(.*\S)\s+(\d+)\s*$", re.ASCII)


# --- where the files come from -------------------------------------------------------------


def _matcher(patterns: Sequence[str], case_sensitive: bool) -> Callable[[str], bool]:
    flags = 0 if case_sensitive else re.IGNORECASE
    regex = re.compile("|".join(f"(?:{fnmatch.translate(p)})" for p in patterns), flags)
    return lambda name: regex.match(name) is not None


def list_directory(
    root: str,
    file_filters: Sequence[str],
    dir_filters: Sequence[str] | None = None,
    case_sensitive: bool = False,
) -> list[tuple[str, int]]:
    """``("<folder>/<file>", label)`` for every matching file of every immediate subfolder of
    ``root``, in DALI's order (folders sorted, files sorted within each)."""
    keep_file = _matcher(file_filters, case_sensitive)
    keep_dir = _matcher(dir_filters, case_sensitive) if dir_filters else (lambda _: True)
    with os.scandir(root) as it:
        folders = sorted(e.name for e in it if e.is_dir() and keep_dir(e.name))
    entries: list[tuple[str, int]] = []
    for label, folder in enumerate(folders):
        with os.scandir(os.path.join(root, folder)) as it:
            # Regular files and symbolic links, as DALI lists them.
            names = sorted(
                e.name
                for e in it
                if (e.is_symlink() or e.is_file(follow_symlinks=False)) and keep_file(e.name)
            )
        entries += [(f"{folder}/{name}", label) for name in names]
    return entries


def parse_file_list(path: str) -> list[tuple[str, int]]:
    """``(name, label)`` for each non-empty line of a DALI file list: a name (which may hold
    spaces) followed by whitespace and a non-negative integer label.

    Raises:
        ValueError: a line without a label, naming the line number.
    """
    entries = []
    with open(path, encoding="utf-8", errors="surrogateescape") as f:
        for number, line in enumerate(f, start=1):
            if not line.strip():
                continue
            match = _LIST_LINE.match(line.rstrip("\r\n"))
            if match is None:
                raise ValueError(
                    f'incorrect format of the list file "{path}", line {number}: expected a file '
                    f"name followed by a label; got: {line.rstrip()!r}"
                )
            label = int(match.group(2))
            if label > _INT32.max:
                raise ValueError(
                    f'list file "{path}", line {number}: label {label} does not fit in int32'
                )
            entries.append((match.group(1), label))
    return entries


# --- argument converters -------------------------------------------------------------------


def _path(value: Any) -> str:
    if isinstance(value, (str, os.PathLike)):
        return os.fspath(value)
    raise TypeError(f"expected a path (a string), got {value!r}")


def _paths(value: Any) -> tuple[str, ...]:
    if isinstance(value, (str, os.PathLike)) or not isinstance(value, (list, tuple)):
        raise TypeError(f"expected a list of file paths, got {value!r}")
    return tuple(_path(v) for v in value)


def _patterns(value: Any) -> tuple[str, ...]:
    patterns = (value,) if isinstance(value, str) else value
    if not isinstance(patterns, (list, tuple)) or not all(isinstance(p, str) for p in patterns):
        raise TypeError(f"expected a list of glob patterns such as '*.jpg', got {value!r}")
    if not patterns:
        raise ValueError("the list of patterns is empty")
    return tuple(patterns)


def _labels(value: Any) -> tuple[int, ...]:
    labels = to_ints()(value)
    for label in labels:
        if not _INT32.min <= label <= _INT32.max:
            raise ValueError(f"label {label} does not fit in int32")
    return labels


# --- the reader ----------------------------------------------------------------------------


class FileReader(Reader):
    """Files listed from ``file_root``, ``file_list`` or ``files``; see the module docstring."""

    def open(self) -> list[str]:
        names, self._paths, labels = self._list_files()
        self._labels = [finish(np.array([label], np.int32)) for label in labels]
        a = self.args
        # Labels are class folders' positions only when file_root alone lists the files.
        folders = a["files"] is None and a["file_list"] is None
        self._class_names = (
            {label: name.split("/", 1)[0] for name, label in zip(names, labels, strict=True)}
            if folders
            else {}
        )
        return names

    def class_names(self) -> dict[int, str]:
        """Label -> class folder name, when ``file_root`` alone gives the labels (the sorted
        subfolders' positions); ``{}`` for ``files`` and ``file_list``, whose labels are the
        user's numbers. What ``Pipeline.class_names()`` collects for the viewer's titles.

        Example:
            >>> from augkit.operators.registry import REGISTRY
            >>> schema = REGISTRY["readers.file"]
            >>> args = {**schema.defaults(), "file_root": "data/images"}
            >>> reader = FileReader(schema, args, "reader", 0, "cpu", 0)
            >>> reader.class_names()[0]
            'animals'
        """
        return dict(self._class_names)

    def load(self, index: int) -> tuple[np.ndarray, np.ndarray]:
        return finish(np.fromfile(self._paths[index], dtype=np.uint8)), self._labels[index]

    def path_of(self, index: int) -> str:
        return self._paths[index]

    def labels_of(self, index: int) -> tuple[int, ...]:
        return (int(self._labels[index][0]),)

    def empty_dtype(self, index: int) -> Any:
        return np.uint8 if index == 0 else np.int32

    def _list_files(self) -> tuple[list[str], list[str], list[int]]:
        a = self.args
        root, file_list, files, labels = a["file_root"], a["file_list"], a["files"], a["labels"]
        if files is not None and file_list is not None:
            raise self.error(
                "file paths can be given through 'files' or 'file_list', but not both "
                f"(file_list={file_list!r})"
            )
        if labels is not None and files is None:
            raise self.error("the argument 'labels' is valid only together with 'files'")
        if root is None and files is None and file_list is None:
            raise self.error(
                "'file_root' is required when neither 'files' nor 'file_list' is given"
            )
        if root is not None and not os.path.isdir(root):
            raise self.error(f"file_root {root!r} does not exist or is not a folder")

        if files is not None:
            if not files:
                raise self.error("'files' is an empty list")
            if labels is not None and len(labels) != len(files):
                raise self.error(f"provided {len(labels)} labels for {len(files)} files")
            names = list(files)
            numbers = list(labels) if labels is not None else list(range(len(files)))
            base = root or ""
        elif file_list is not None:
            if not os.path.isfile(file_list):
                raise self.error(f"file_list {file_list!r} does not exist or is not a file")
            try:
                listed = parse_file_list(file_list)
            except (OSError, ValueError) as exc:
                raise self.error(str(exc)) from None
            if not listed:
                raise self.error(f"no files found: the file_list {file_list!r} lists no files")
            names = [name for name, _ in listed]
            numbers = [label for _, label in listed]
            base = root if root is not None else os.path.dirname(file_list)
        else:
            try:
                listed = list_directory(
                    root, a["file_filters"], a["dir_filters"], a["case_sensitive_filter"]
                )
            except OSError as exc:
                raise self.error(f"cannot list file_root {root!r}: {exc}") from None
            if not listed:
                raise self.error(self._nothing_found(root))
            names = [name for name, _ in listed]
            numbers = [label for _, label in listed]
            base = root
        # Absolute paths, so that a later os.chdir() (in a notebook) does not lose the files.
        paths = [os.path.abspath(os.path.join(base, name)) for name in names]
        if files is not None or file_list is not None:
            self._check_listed(paths, "files" if files is not None else f"file_list {file_list!r}")
        return names, paths, numbers

    def _nothing_found(self, root: str) -> str:
        """Why ``file_root`` gave no files, from what it holds, with DALI's rule."""
        a = self.args
        filters = list(a["file_filters"])
        dirs = f" in subfolders matching {list(a['dir_filters'])}" if a["dir_filters"] else ""
        rule = (
            "as in DALI, readers.file takes the files of file_root's immediate subfolders (one "
            "class per subfolder, numbered in sorted order) and ignores files lying in "
            "file_root itself"
        )
        keep = _matcher(filters, a["case_sensitive_filter"])
        with os.scandir(root) as it:
            entries = list(it)
        loose = sorted(e.name for e in entries if e.is_file() and keep(e.name))
        folders = sorted(e.name for e in entries if e.is_dir())
        if loose:
            shown = ", ".join(repr(n) for n in loose[:3]) + (" ..." if len(loose) > 3 else "")
            found = (
                f"it holds {len(loose)} file(s) matching {filters} directly ({shown}) and "
                f"{len(folders)} subfolder(s){dirs and ' matching the dir_filters'} with none"
            )
            advice = (
                "move them into one subfolder per class, or list them with "
                f"files=[...] (e.g. fn.readers.file(files=sorted(glob.glob('{root}/*.jpg'))), "
                "labelled by their index unless labels=[...] is given)"
            )
        elif not folders:
            found = "it is empty" if not entries else "it holds no subfolders and no matching files"
            advice = "give the folder of the data set, or list the files with files=[...]"
        else:
            found = f"its {len(folders)} subfolder(s) hold no files matching {filters}{dirs}"
            advice = "check file_filters (glob patterns such as '*.jpg') and dir_filters"
        return f"No files found in {root}: {found}; {rule}. {advice[0].upper()}{advice[1:]}"

    def _check_listed(self, paths: list[str], where: str) -> None:
        """Listed files that are missing (or folders) are known now: refuse them at build
        rather than when their batch comes (one stat per file)."""
        missing = [path for path in paths if not os.path.isfile(path)]
        if missing:
            raise self.error(
                f"{len(missing)} of the {len(paths)} files in {where} do not exist or are not "
                f"files: {listed(missing)}"
            )


register(
    OperatorSchema(
        name="readers.file",
        class_name="readers.File",
        impl=FileReader,
        min_inputs=0,
        max_inputs=0,
        num_outputs=2,
        aliases=("FileReader",),
        fn_aliases=("file_reader",),
        output_kinds=fixed_kinds(ENCODED_BYTES, LABELS),
        role="reader",
        doc=(
            "Reads files from disk and returns their raw bytes (uint8, 1-D) and an int32 label "
            "of shape (1,), as DALI's file reader. The files are the immediate subfolders' files "
            "of ``file_root`` (label = index of the subfolder in sorted order), the lines of "
            "``file_list`` (``path label``), or ``files`` (with ``labels``, or labelled by their "
            "index). Each sample's ``source_info`` is its path as listed. Sharding follows "
            "DALI (``shard_id``/``num_shards``; shards rotate each epoch unless "
            "``stick_to_shard``). ``random_shuffle`` reads each epoch in a permutation seeded by "
            "the pipeline seed; ``shuffle_after_epoch`` permutes the whole data set each epoch "
            "with a fixed key shared by all shards (augkit's rules: DALI's shuffle order cannot "
            "be reproduced). ``pad_last_batch`` fills the last batch of an epoch with copies of "
            "its last sample and pads every shard to ceil(N / num_shards) samples."
        ),
        args=[
            Arg("file_root", "folder of the data set (one subfolder per class)", None, _path),
            Arg(
                "file_list",
                "text file of 'path label' lines (paths relative to file_root, or to the list)",
                None,
                _path,
            ),
            Arg("files", "list of file paths (relative to file_root when given)", None, _paths),
            Arg("labels", "labels of 'files' (None: each file's index in 'files')", None, _labels),
            Arg(
                "file_filters",
                "glob patterns of the files to read from file_root's subfolders",
                DEFAULT_FILE_FILTERS,
                _patterns,
            ),
            Arg(
                "dir_filters",
                "glob patterns of the subfolders to read (None: all of them)",
                None,
                _patterns,
            ),
            Arg(
                "case_sensitive_filter",
                "match file_filters and dir_filters case-sensitively",
                False,
                to_bool,
            ),
            *READER_ARGS,
        ],
    )
)
