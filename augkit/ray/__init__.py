"""augkit pipelines as Ray Data stages (the optional extra: ``pip install 'augkit[ray]'``).

- ``read_pipeline(pipeline_fn, num_shards=..., output_names=...)``: a sharded pipeline as a
  ``ray.data.Dataset``, one read task per shard (``augkit.ray.datasource``).
- ``Augment(pipeline_fn, input_names=..., output_names=..., id_column=...)``: a
  ``map_batches`` stage whose actors run the pipeline on the dataset's rows
  (``augkit.ray.augment``).
- ``init_local`` / ``shutdown_local`` / ``local_ray``: a Ray on this machine that stays on
  loopback and asks nothing of the network (``augkit.ray.local``).

Decisions and traps:

- Ray is imported when it is needed, not by ``import augkit.ray``: the local start must set
  its environment before Ray is imported, and the module imports (and its docstrings run)
  where Ray is not installed.
- Nothing starts Ray behind the user's back: ``read_pipeline`` and ``Augment`` raise until Ray
  runs (``init_local()`` here, ``ray.init(address=...)`` on a cluster), where Ray Data would
  start a default Ray, one that binds to every interface and probes cloud metadata addresses.
- **The CPU rule.** A pipeline runs ``num_threads`` threads, so each Ray task or actor that runs
  one asks Ray for ``num_cpus = num_threads`` (capped at the largest node's CPUs:
  ``cpus_for_threads``). Ray then never runs more pipelines at once than the cores can take,
  and two levels of threading do not oversubscribe them. ``read_pipeline`` does it itself;
  give ``map_batches`` ``num_cpus=stage.num_cpus``. Actors keep their CPUs while the stage
  runs: with read tasks upstream, leave them a CPU (on ``num_cpus=2``, an actor pool of 2 with
  1 CPU each never lets a read task start and hangs): fractional CPUs (``num_cpus=0.5``) or
  fewer actors. Ray's object store is sized by ``init_local``'s ``object_store_memory``
  (512 MiB by default); Ray Data's backpressure keeps the blocks in flight within it.

Example:
    >>> import augkit.ray
    >>> augkit.ray.shutdown_local()  # no local Ray started: nothing to do
"""

from augkit.ray.augment import Augment, row_key
from augkit.ray.datasource import batch_columns, cpus_for_threads, read_pipeline
from augkit.ray.local import LOCAL_ENVIRONMENT, init_local, local_ray, shutdown_local

__all__ = [
    "LOCAL_ENVIRONMENT",
    "Augment",
    "batch_columns",
    "cpus_for_threads",
    "init_local",
    "local_ray",
    "read_pipeline",
    "row_key",
    "shutdown_local",
]
