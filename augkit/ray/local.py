"""A local Ray that stays on this machine: ``init_local``, ``shutdown_local``, ``local_ray``.

Decisions and traps (measured with Ray 2.60.0 on Linux, each under ``strace -f -e
trace=connect,sendto,bind``; ``tests/test_ray.py`` repeats the trace on every run):

- **Nothing may leave the machine.** With every setting below except the next one, and
  ``_node_ip_address="127.0.0.1"``, every Ray process still binds to all interfaces
  (``*:port``) and talks to the others through the machine's external address, and one of them
  connects a UDP socket to 8.8.8.8:53 to learn that address. What keeps it on loopback is
  ``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0``, which Ray reads into
  ``ray._private.ray_constants.ENABLE_RAY_CLUSTER`` *when it is imported*: so it is set in the
  environment (for the processes Ray starts) and, where ``ray`` was imported before, on that
  constant too; the node address is 127.0.0.1 and every socket is on loopback.
- **The cloud probe.** Ray's dashboard process runs even with ``include_dashboard=False`` (a
  "minimal" dashboard whose one module is ``UsageStatsHead``), and that module reads
  ``~/ray_bootstrap_config.yaml`` whatever the usage-stats setting: when the file is missing
  it asks 169.254.169.254 (Azure, AWS) and resolves ``metadata.google.internal`` (GCP) to guess
  the cloud. A file holding ``{}`` stops it. Rather than writing into the user's home,
  ``HOME`` points at a private folder (inside the temp dir) while ``ray.init`` starts Ray's
  processes, and Ray's workers get the real ``HOME`` back through the job's ``runtime_env``
  (user site-packages, caches).
- ``RAY_AUTH_MODE=disabled``: otherwise a new local cluster turns token authentication on and
  writes ``~/.ray/auth_token``. ``RAY_USAGE_STATS_ENABLED=0``: no usage report, no prompt.
- The environment variables are set only while the local Ray runs and put back by
  ``shutdown_local``, so the same process can later join a real cluster.
- ``_temp_dir`` is short and fresh (``/tmp/augkit-ray-XXXXXX``): Ray puts Unix sockets under
  ``<temp>/session_<date>_<pid>/sockets/``, and a socket path may have at most 107 bytes.
  ``shutdown_local`` removes it (``keep_temp_dir=True`` keeps the logs).
- ``object_store_memory`` is capped (default 512 MiB): Ray's default is 30% of the RAM.
- ``ray.shutdown()`` returns before every process has gone (dead workers linger ~1 s as
  zombies): ``shutdown_local`` waits for every process Ray started from this one and kills, by
  its id, any that is still running after ``timeout`` seconds.
- Under pytest's ``filterwarnings = error`` Ray Data's own ``DataContext()`` raises
  DeprecationWarnings: pyproject filters those of ``ray.data.context`` only.
- **Keep the workers warm.** A Ray worker that runs an augkit pipeline has imported augkit,
  NumPy, OpenCV and torch (5-10 s on this 2-core machine). Ray kills a worker that has been
  idle for 1 s once the node has more workers than CPUs (its ``num_workers_soft_limit``; Ray
  Data's own actors count), so after a pass whose read tasks took 2 CPUs each, the next pass of
  1-CPU tasks waited ~6 s for a new worker: measured, 3-epoch passes at 131-171 img/s against
  323-400 with the workers kept. ``init_local`` sets ``idle_worker_killing_time_threshold_ms``
  to 10 minutes (``WARM_WORKER_MS``; ``_system_config`` overrides it). On a cluster, start
  each node with ``ray start --system-config='{"idle_worker_killing_time_threshold_ms":
  600000}'`` (``docs/scale_out.md``).
- Start Ray once per process (a test module, a notebook): ``init`` takes 2.5-5 s, shutdown
  ~1.5 s, the first batch of an actor pool 3-4 s, and a started Ray holds ~1.8 GiB.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

# What keeps a local Ray on loopback and offline (see the module docstring).
LOCAL_ENVIRONMENT = {
    "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0",
    "RAY_AUTH_MODE": "disabled",
    "RAY_USAGE_STATS_ENABLED": "0",
}
LOOPBACK = "127.0.0.1"
DEFAULT_OBJECT_STORE_MEMORY = 512 * 2**20
WARM_WORKER_MS = 600_000
"""How long an idle Ray worker (augkit and torch imported) is kept (module docstring)."""
# Unix sockets: sun_path holds 108 bytes with its terminating NUL.
MAX_SOCKET_PATH = 107


def require_ray() -> Any:
    """``import ray`` with the message that says how to get it.

    Raises:
        ImportError: Ray is not installed.
    """
    try:
        import ray
        import ray.data
    except ImportError as error:
        raise ImportError(
            "augkit.ray needs Ray Data: pip install 'augkit[ray]' (ray[data]==2.60.0)"
        ) from error
    return ray


def require_started_ray(who: str) -> Any:
    """``ray``, once it runs in this process.

    Ray Data would otherwise start a default Ray, one that is not local (this module's
    docstring), at the first dataset that runs.

    Raises:
        ImportError: Ray is not installed.
        RuntimeError: Ray is not started.
    """
    ray = require_ray()
    if not ray.is_initialized():
        raise RuntimeError(
            f"{who}: start Ray first: augkit.ray.init_local() on this machine, or "
            f"ray.init(address=...) to join a cluster"
        )
    return ray


@dataclass
class _LocalRay:
    """What ``init_local`` changed, for ``shutdown_local`` to put back."""

    temp_dir: str
    keep_temp_dir: bool
    saved_environment: dict[str, str | None]
    saved_cluster_flag: bool | None
    processes: set[int] = field(default_factory=set)


_current: _LocalRay | None = None


def init_local(
    num_cpus: int = 2,
    *,
    object_store_memory: int = DEFAULT_OBJECT_STORE_MEMORY,
    keep_temp_dir: bool = False,
    **ray_init_kwargs: Any,
) -> Any:
    """Start a Ray on this machine that listens and talks on loopback only and asks nothing of
    the network (the settings and why: this module's docstring).

    Args:
        num_cpus: CPUs Ray schedules on (read tasks and actors ask for them: ``augkit.ray``).
        object_store_memory: bytes of Ray's shared-memory object store.
        keep_temp_dir: keep Ray's temp dir (its logs) after ``shutdown_local``.
        **ray_init_kwargs: more arguments of ``ray.init`` (not ``address``: this starts a new
            local Ray; ``runtime_env`` is merged with the one that restores ``HOME``).

    Returns:
        What ``ray.init`` returns.

    Raises:
        RuntimeError: Ray is already running in this process.
        ValueError: an argument that would not keep Ray local.

    Example:
        >>> import augkit.ray
        >>> augkit.ray.init_local(num_cpus=2)  # doctest: +SKIP
        >>> augkit.ray.shutdown_local()  # doctest: +SKIP
    """
    global _current
    for name in ("address", "_node_ip_address", "dashboard_host", "_temp_dir"):
        if name in ray_init_kwargs:
            raise ValueError(f"init_local sets {name} itself (a local Ray on loopback)")
    saved_environment = {name: os.environ.get(name) for name in LOCAL_ENVIRONMENT}
    os.environ.update(LOCAL_ENVIRONMENT)  # before `import ray`, which reads them
    try:
        ray = require_ray()
        if ray.is_initialized():
            raise RuntimeError(
                "Ray is already running in this process; call ray.shutdown() first, so that "
                "init_local can start one that stays on this machine"
            )
    except BaseException:
        _restore_environment(saved_environment)
        raise
    temp_dir = tempfile.mkdtemp(prefix="augkit-ray-", dir="/tmp" if os.path.isdir("/tmp") else None)
    # Ray's longest socket: <temp>/session_2026-01-01_00-00-00_000000_<pid>/sockets/plasma_store
    longest = len(temp_dir) + len("/session_2026-01-01_00-00-00_000000_4194304/sockets/") + 12
    if longest > MAX_SOCKET_PATH:
        shutil.rmtree(temp_dir, ignore_errors=True)
        _restore_environment(saved_environment)
        raise ValueError(f"temp dir {temp_dir} is too long for Ray's Unix socket paths")
    home = os.path.join(temp_dir, "home")
    os.mkdir(home)
    with open(os.path.join(home, "ray_bootstrap_config.yaml"), "w") as config:
        config.write("{}\n")

    constants = sys.modules.get("ray._private.ray_constants")
    state = _LocalRay(
        temp_dir=temp_dir,
        keep_temp_dir=keep_temp_dir,
        saved_environment=saved_environment,
        saved_cluster_flag=getattr(constants, "ENABLE_RAY_CLUSTER", None),
    )
    if constants is not None and hasattr(constants, "ENABLE_RAY_CLUSTER"):
        # ray was imported before the variable was set. (`constants` is a ModuleType from
        # sys.modules: mypy knows none of its attributes.)
        constants.ENABLE_RAY_CLUSTER = False  # type: ignore[attr-defined]

    runtime_env = dict(ray_init_kwargs.pop("runtime_env", None) or {})
    real_home = os.environ.get("HOME")
    if real_home is not None:
        runtime_env["env_vars"] = {"HOME": real_home, **runtime_env.get("env_vars", {})}
    ray_init_kwargs.setdefault("include_dashboard", False)
    ray_init_kwargs["_system_config"] = {
        "idle_worker_killing_time_threshold_ms": WARM_WORKER_MS,
        **(ray_init_kwargs.get("_system_config") or {}),
    }
    ray_init_kwargs.setdefault("log_to_driver", False)
    before = _descendants({os.getpid()})
    _current = state
    try:
        os.environ["HOME"] = home  # only Ray's own processes, started by ray.init, see it
        try:
            context = ray.init(
                num_cpus=num_cpus,
                object_store_memory=object_store_memory,
                _node_ip_address=LOOPBACK,
                dashboard_host=LOOPBACK,
                _temp_dir=temp_dir,
                runtime_env=runtime_env or None,
                **ray_init_kwargs,
            )
        finally:
            if real_home is None:
                os.environ.pop("HOME", None)
            else:
                os.environ["HOME"] = real_home
    except BaseException:
        shutdown_local()
        raise
    state.processes = _descendants({os.getpid()}) - before
    return context


def shutdown_local(timeout: float = 10.0) -> None:
    """Stop the Ray that ``init_local`` started and wait until none of its processes is left
    (any still running after ``timeout`` seconds is killed by its id); puts back the
    environment and removes Ray's temp dir. Does nothing when ``init_local`` did not start one.

    Example:
        >>> import augkit.ray
        >>> augkit.ray.shutdown_local()  # no local Ray: nothing to do
    """
    global _current
    state, _current = _current, None
    if state is None:
        return
    import ray

    # Ray's processes: those ray.init started, and theirs (workers are the raylet's children).
    started = state.processes | _descendants(state.processes)
    try:
        ray.shutdown()
    finally:
        _wait_gone(started, timeout)
        _restore_environment(state.saved_environment)
        constants = sys.modules.get("ray._private.ray_constants")
        if state.saved_cluster_flag is not None and constants is not None:
            # a ModuleType from sys.modules: mypy knows none of its attributes
            constants.ENABLE_RAY_CLUSTER = state.saved_cluster_flag  # type: ignore[attr-defined]
        if not state.keep_temp_dir:
            shutil.rmtree(state.temp_dir, ignore_errors=True)


@contextlib.contextmanager
def local_ray(num_cpus: int = 2, **kwargs: Any) -> Iterator[Any]:
    """``init_local`` on entry, ``shutdown_local`` on exit (arguments: ``init_local``'s).

    Example:
        >>> import augkit.ray
        >>> with augkit.ray.local_ray(num_cpus=2):  # doctest: +SKIP
        ...     print(augkit.ray.read_pipeline(...).count())
    """
    context = init_local(num_cpus, **kwargs)
    try:
        yield context
    finally:
        shutdown_local()


def _restore_environment(saved: dict[str, str | None]) -> None:
    for name, value in saved.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


def _descendants(roots: set[int]) -> set[int]:
    """Every process below those of ``roots`` (Linux /proc; empty elsewhere)."""
    children: dict[int, list[int]] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return set()
    for entry in entries:
        if not entry.isdigit():
            continue
        parent = _parent(int(entry))
        if parent is not None:
            children.setdefault(parent, []).append(int(entry))
    found: set[int] = set()
    todo = list(roots)
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def _parent(pid: int) -> int | None:
    stat = _stat(pid)
    return int(stat[1]) if stat else None


def _stat(pid: int) -> list[str] | None:
    """(state, ppid, ...) of ``pid`` from /proc/<pid>/stat, or None when it has gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            text = f.read()
    except OSError:
        return None
    return text[text.rfind(")") + 2 :].split()  # the name may hold spaces and parentheses


def _wait_gone(pids: set[int], timeout: float) -> None:
    """Wait until every process of ``pids`` has gone (zombies: until reaped); kill the ones
    still running at the deadline."""
    deadline = time.monotonic() + timeout
    while True:
        left = {pid for pid in pids if _stat(pid) is not None}
        if not left:
            return
        if time.monotonic() > deadline:
            for pid in left:
                stat = _stat(pid)
                if stat and stat[0] != "Z":
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.kill(pid, signal.SIGKILL)
            return
        time.sleep(0.05)
