"""``augkit.ray``: pipelines as Ray Data stages, on a local Ray that stays on this machine.

One Ray for the module (``init_local(num_cpus=2)``: a start costs 5-10 s here, an actor pool's
first batch 3-5 s), started after the network check, which starts its own Ray in a subprocess
under strace. Samples are told apart by their encoded bytes (the 15 files of ``data/images``
differ), which the pipelines output beside the augmented image.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("ray", reason="augkit.ray needs Ray: pip install 'augkit[ray]'")
import ray

import augkit.ray
from augkit import fn, pipeline_def, types
from augkit.errors import ArgumentError
from augkit.ray import local
from augkit.ray.datasource import read_shard

ROOT = Path(__file__).resolve().parents[1]
IMAGES = str(ROOT / "data" / "images")
FILES = sorted((ROOT / "data" / "images").glob("*/*.jpg"))
EXAMPLE = ROOT / "examples" / "augment_dataset_with_ray.py"
SEED = 17


def _die_once(marker: str) -> Any:
    """A function that ends its process the first time any process calls it."""

    def identity(x: np.ndarray) -> np.ndarray:
        try:
            fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            return x
        os.close(fd)
        os._exit(3)

    return identity


def _fail_on(name: str) -> Any:
    def check(jpeg: np.ndarray) -> np.ndarray:
        if len(jpeg) == os.path.getsize(next(f for f in FILES if f.name == name)):
            raise ValueError(f"refusing {name}")
        return jpeg

    return check


@pipeline_def(batch_size=4, num_threads=1, device_id=None, seed=SEED)
def photos(
    shard_id: int = 0,
    num_shards: int = 1,
    shuffle: bool = False,
    pad: bool = False,
    hook: Any = None,
) -> Any:
    jpegs, labels = fn.readers.file(
        file_root=IMAGES,
        shard_id=shard_id,
        num_shards=num_shards,
        random_shuffle=shuffle,
        pad_last_batch=pad,
        name="Reader",
    )
    if hook is not None:
        jpegs = fn.python_function(jpegs, function=hook)
    images = fn.resize(fn.decoders.image(jpegs, output_type=types.RGB), size=(64, 64))
    return fn.flip(images, horizontal=fn.random.coin_flip()), labels, jpegs


@pipeline_def(batch_size=4, num_threads=1, device_id=None, seed=SEED)
def rotate_some(hook: Any = None) -> Any:
    images = fn.external_source(name="image", layout="HWC")
    if hook is not None:
        images = fn.python_function(images, function=hook)
    return fn.rotate(images, angle=fn.random.uniform(range=(-30, 30)), keep_size=True)


NAMES = ["image", "label", "jpeg"]


def _digest(array: np.ndarray) -> str:
    return hashlib.sha1(np.ascontiguousarray(array).tobytes()).hexdigest()[:12]


def _rows(rows: list[dict[str, Any]]) -> Counter:
    """The multiset of (file, label, augmented image) of a dataset's rows."""
    return Counter(
        (_digest(r["jpeg"]), int(np.asarray(r["label"]).ravel()[0]), _digest(r["image"]))
        for r in rows
    )


def _local_rows(num_shards: int, epochs: int = 1, **kwargs: Any) -> Counter:
    rows: Counter = Counter()
    for shard in range(num_shards):
        for columns in read_shard(photos, shard, num_shards, NAMES, epochs, kwargs):
            rows += _rows(
                [dict(zip(columns, v, strict=True)) for v in zip(*columns.values(), strict=True)]
            )
    return rows


def _files() -> Counter:
    return Counter(_digest(np.frombuffer(f.read_bytes(), np.uint8)) for f in FILES)


# --- the network check (its own Ray, before the module's) ---------------------------------------
_START = """
import augkit.ray, ray
augkit.ray.init_local(num_cpus=1)
assert ray.get(ray.remote(lambda: 1).remote()) == 1
assert ray.data.range(4).count() == 4
augkit.ray.shutdown_local()
"""
# strace shows an address as {sa_family=AF_INET, ..., sin_addr=inet_addr("127.0.0.1")}
# or {sa_family=AF_INET6, ..., inet_pton(AF_INET6, "::1", &sin6_addr), ...}
_ADDRESS = re.compile(
    r'sa_family=(AF_\w+)(?:[^}]*?(?:inet_addr\(|inet_pton\(AF_INET6, )"([^"]*)")?'
)


def _local_address(family: str, address: str | None) -> bool:
    if family in ("AF_UNIX", "AF_NETLINK", "AF_UNSPEC"):  # files, the kernel, a disconnect
        return True
    if family == "AF_INET":
        return address is not None and address.startswith("127.")
    if family == "AF_INET6":
        return address is not None and (address == "::1" or address.startswith("::ffff:127."))
    return False


def test_local_ray_talks_on_loopback_only(tmp_path: Path) -> None:
    strace = shutil.which("strace")
    assert strace, "strace is missing: install Debian's strace (make venv does, as root)"
    trace = tmp_path / "trace.txt"
    run = subprocess.run(
        [strace, "-f", "-qq", "--seccomp-bpf", "-e", "trace=connect,sendto,sendmsg", "-e",
         "signal=none", "-o", str(trace), sys.executable, "-c", _START],
        capture_output=True, text=True, timeout=180, cwd=ROOT,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    text = trace.read_text()
    addresses = Counter(_ADDRESS.findall(text))
    assert any(f == "AF_INET" or f == "AF_INET6" for f, _ in addresses), "nothing traced"
    outside = {a: n for a, n in addresses.items() if not _local_address(*a)}
    assert not outside, f"Ray talked beyond loopback: {outside}"


def test_trace_check_flags_what_a_default_ray_does() -> None:
    """Lines of a trace of ray.init() with only _node_ip_address="127.0.0.1" set."""
    lines = """
    connect(9, {sa_family=AF_INET, sin_port=htons(53), sin_addr=inet_addr("8.8.8.8")}, 16) = 0
    connect(44, {sa_family=AF_INET6, sin6_port=htons(43943), sin6_flowinfo=htonl(0), \
inet_pton(AF_INET6, "::ffff:192.0.2.2", &sin6_addr), sin6_scope_id=0}, 28) = 0
    connect(7, {sa_family=AF_INET, sin_port=htons(38317), sin_addr=inet_addr("127.0.0.1")}, 16)
    connect(3, {sa_family=AF_UNIX, sun_path="/tmp/augkit-ray-x/session/sockets/raylet"}, 110)
    """
    found = [a for a in _ADDRESS.findall(lines) if not _local_address(*a)]
    assert found == [("AF_INET", "8.8.8.8"), ("AF_INET6", "::ffff:192.0.2.2")]


def test_read_pipeline_refuses_without_ray() -> None:
    assert not ray.is_initialized(), "this test runs before the module's Ray starts"
    with pytest.raises(RuntimeError, match="start Ray first"):
        augkit.ray.read_pipeline(photos, num_shards=1, output_names=NAMES)


# --- the module's Ray -----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def local_ray() -> Any:
    context = augkit.ray.init_local(num_cpus=2)
    started = set(local._current.processes) if local._current else set()
    assert started, "init_local found no process of Ray's"
    yield context
    augkit.ray.shutdown_local()
    left = {pid for pid in started if local._stat(pid) is not None}
    assert not left, f"processes of Ray left after shutdown_local: {left}"
    assert not os.environ.get("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER")


@ray.remote(num_cpus=1)
def _worker_pid(seconds: float) -> int:
    import time

    time.sleep(seconds)
    return os.getpid()


@ray.remote(num_cpus=0)
class _Bystander:
    """An actor's worker, as Ray Data's own actors are: it counts towards the workers a node
    keeps before killing idle ones."""

    def ping(self) -> int:
        return os.getpid()


def test_idle_workers_are_kept_between_stages(local_ray: Any) -> None:
    # Two 1-CPU workers (which would have imported augkit and torch), then a 2-CPU task that
    # leaves one idle for 2.5 s while an actor's worker is up: Ray's default kills an idle
    # worker after 1 s here, and the next pass waited ~6 s for a fresh one (benchmarks/README).
    first = set(ray.get([_worker_pid.remote(0.5), _worker_pid.remote(0.5)]))
    bystander = _Bystander.remote()
    try:
        ray.get(bystander.ping.remote(), timeout=60)
        ray.get(_worker_pid.options(num_cpus=2).remote(2.5), timeout=60)
        time.sleep(0.5)
    finally:
        ray.kill(bystander)
    gone = {pid for pid in first if local._stat(pid) is None}
    assert not gone, f"Ray killed idle workers {gone} (init_local should keep them)"


def test_read_pipeline_one_shard_is_the_local_pipeline(local_ray: Any) -> None:
    rows = augkit.ray.read_pipeline(photos, num_shards=1, output_names=NAMES).take_all()
    pipe = photos(shard_id=0, num_shards=1)
    local_batches = list(pipe.epoch(last_batch_policy="partial"))
    assert len(rows) == 15
    expected = [
        (out[0].at(i), out[1].at(i), out[2].at(i))
        for out in local_batches
        for i in range(len(out[0]))
    ]
    for row, (image, label, jpeg) in zip(rows, expected, strict=True):
        np.testing.assert_array_equal(row["image"], image)
        np.testing.assert_array_equal(row["label"], label)
        np.testing.assert_array_equal(row["jpeg"], jpeg)
    assert rows[0]["image"].shape == (64, 64, 3) and rows[0]["jpeg"].ndim == 1


def test_read_pipeline_shards_give_every_sample_once_the_same_each_run(local_ray: Any) -> None:
    ds = augkit.ray.read_pipeline(photos, num_shards=2, output_names=NAMES, shuffle=True)
    first, second = _rows(ds.take_all()), _rows(ds.take_all())
    assert Counter(f for f, _, _ in first.elements()) == _files()
    assert first == second == _local_rows(2, shuffle=True)
    assert first != _local_rows(1, shuffle=True), "shards should draw their own augmentations"


def test_read_pipeline_epochs(local_ray: Any) -> None:
    ds = augkit.ray.read_pipeline(photos, num_shards=2, output_names=NAMES, epochs=2, shuffle=True)
    rows = _rows(ds.take_all())
    files = Counter(f for f, _, _ in rows.elements())
    assert files == _files() + _files()
    assert rows == _local_rows(2, epochs=2, shuffle=True)


def test_read_shard_epochs_are_new_orders_and_draws() -> None:
    """The read task's loop, without Ray. Shard 0 of 2 covers files [0, 7), shard 1 [7, 15);
    without stick_to_shard epoch 1 of each reads the other's range (DALI's rotation)."""
    streams = []
    for shard in range(2):
        batches = list(read_shard(photos, shard, 2, NAMES, 2, {"shuffle": True}))
        streams.append(
            [
                (_digest(j), _digest(i))
                for b in batches
                for j, i in zip(b["jpeg"], b["image"], strict=True)
            ]
        )
    (zero, one) = streams
    epoch0, epoch1 = zero[:7] + one[:8], zero[7:] + one[8:]
    assert len(zero) + len(one) == 30
    assert Counter(f for f, _ in epoch0) == Counter(f for f, _ in epoch1) == _files()
    # files [7, 15): shard 1 in epoch 0, shard 0 in epoch 1, in another order and other draws
    assert [f for f, _ in one[:8]] != [f for f, _ in zero[7:]]
    assert set(one[:8]) != set(zero[7:])


def test_read_shard_refuses_padding() -> None:
    with pytest.raises(ArgumentError, match="Reader has pad_last_batch=True"):
        list(read_shard(photos, 0, 2, NAMES, 1, {"pad": True}))


def test_read_pipeline_needs_one_name_per_output(local_ray: Any) -> None:
    ds = augkit.ray.read_pipeline(photos, num_shards=1, output_names=["image", "label"])
    with pytest.raises(Exception, match="3 outputs but 2 output_names"):
        ds.take_all()


def test_read_pipeline_error_names_operator_sample_and_file(local_ray: Any) -> None:
    hook = _fail_on("coffee_cup.jpg")
    ds = augkit.ray.read_pipeline(photos, num_shards=2, output_names=NAMES, hook=hook)
    with pytest.raises(Exception) as caught:
        ds.take_all()
    text = str(caught.value)
    # OperatorError's words: operator, function, sample, file, the user's exception
    pattern = (
        r"operator PythonFunction_\d+ \(function _fail_on.<locals>.check\), sample #\d+ "
        r"\(objects/coffee_cup\.jpg\): ValueError: refusing coffee_cup\.jpg"
    )
    assert re.search(pattern, text), text


def test_read_task_that_dies_is_retried_without_loss_or_duplicates(
    local_ray: Any, tmp_path: Path
) -> None:
    marker = tmp_path / "died"
    ds = augkit.ray.read_pipeline(
        photos, num_shards=2, output_names=NAMES, hook=_die_once(str(marker))
    )
    rows = _rows(ds.take_all())
    assert marker.exists(), "the read task should have died once"
    assert rows == _local_rows(2, hook=_die_once(str(marker)))  # the marker is there: no death


# --- Augment -----------------------------------------------------------------------------------
def _items() -> list[dict[str, Any]]:
    rng = np.random.default_rng(0)
    return [
        {"id": 1000 + i, "image": rng.integers(0, 255, (24, 32, 3), np.uint8), "label": i % 3}
        for i in range(15)
    ]


def _keyed_reference(hook: Any = None) -> dict[int, np.ndarray]:
    """Each item's image as the pipeline augments it in this process, keyed by its id."""
    pipe = rotate_some(hook=hook)
    items = _items()
    out = {}
    for start in range(0, len(items), 4):
        chunk = items[start : start + 4]
        pipe.feed_input("image", [i["image"] for i in chunk])
        (images,) = pipe.run_keyed([i["id"] for i in chunk], iteration=0)
        out.update({i["id"]: images.at(k) for k, i in enumerate(chunk)})
    return out


def _augment(actors: int, batch_size: int, hook: Any = None) -> dict[int, dict[str, Any]]:
    stage = augkit.ray.Augment(
        rotate_some, input_names=["image"], output_names=["image"], id_column="id", hook=hook
    )
    ds = ray.data.from_items(_items()).map_batches(
        stage,
        batch_format="numpy",
        batch_size=batch_size,
        num_cpus=stage.num_cpus / actors,
        compute=ray.data.ActorPoolStrategy(size=actors),
    )
    rows = ds.take_all()
    assert len(rows) == 15
    return {int(r["id"]): r for r in rows}


def test_augment_with_ids_is_the_same_for_any_actor_count_and_batch_size(local_ray: Any) -> None:
    reference = _keyed_reference()
    for actors, batch_size in [(1, 3), (2, 8)]:
        rows = _augment(actors, batch_size)
        assert sorted(rows) == sorted(reference)
        for key, row in rows.items():
            np.testing.assert_array_equal(row["image"], reference[key])
            assert row["label"] == (key - 1000) % 3  # passed through


def test_augment_actor_that_dies_is_restarted_without_loss_or_duplicates(
    local_ray: Any, tmp_path: Path
) -> None:
    marker = tmp_path / "died"
    rows = _augment(1, 8, hook=_die_once(str(marker)))
    assert marker.exists(), "the actor should have died once"
    reference = _keyed_reference(hook=_die_once(str(marker)))  # the marker is there: no death
    assert sorted(rows) == sorted(reference)
    for key, row in rows.items():
        np.testing.assert_array_equal(row["image"], reference[key])


def test_augment_is_a_stage_class() -> None:
    stage = augkit.ray.Augment(rotate_some, input_names=["image"], output_names=["image"])
    assert isinstance(stage, type) and issubclass(stage, augkit.ray.Augment)
    assert stage.num_threads == 1
    with pytest.raises(ArgumentError, match="input_names must be a list of distinct column names"):
        augkit.ray.Augment(rotate_some, input_names="image", output_names=["image"])


def test_augment_runs_chunks_of_the_pipeline_batch_size() -> None:
    """The stage's __call__ in this process: a Ray batch of 10 rows runs as 4 + 4 + 2."""
    stage = augkit.ray.Augment(
        rotate_some, input_names=["image"], output_names=["image"], id_column="id"
    )()
    items = _items()[:10]
    batch = {k: np.stack([np.asarray(i[k]) for i in items]) for k in ("id", "image", "label")}
    out = stage(batch)
    assert sorted(out) == ["id", "image", "label"] and out["image"].shape == (10, 24, 32, 3)
    reference = _keyed_reference()
    for key, image in zip(out["id"], out["image"], strict=True):
        np.testing.assert_array_equal(image, reference[int(key)])


def test_row_keys_are_python_values() -> None:
    assert type(augkit.ray.row_key(np.int64(5))) is int
    assert augkit.ray.row_key(np.array([7])) == 7
    assert augkit.ray.row_key(np.str_("a.jpg")) == "a.jpg"


def test_example_reads_augments_and_writes_every_photo(local_ray: Any, tmp_path: Path) -> None:
    """examples/augment_dataset_with_ray.py in the module's Ray: read tasks of 1 CPU and a pool
    of 2 actors of half a CPU on 2 CPUs (with 1 CPU each the read tasks could starve)."""
    spec = importlib.util.spec_from_file_location("augment_dataset_with_ray", EXAMPLE)
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)  # not in sys.modules: Ray sends its functions by value
    assert example.augment_to_parquet(tmp_path / "out") == 15
    rows = ray.data.read_parquet(str(tmp_path / "out")).take_all()
    assert sorted(int(r["id"]) for r in rows) == sorted(f.stat().st_size for f in FILES)
    assert all(r["image"].shape == (64, 64, 3) for r in rows)
