"""``check_operator``: the one helper every operator's tests go through.

It feeds the given batches into a pipeline through ``fn.external_source``, runs the operator,
and checks what a user would check of any operator:

- the output matches a reference implementation (Pillow, NumPy, torchvision) per sample;
- the result does not depend on the number of threads (1 and 3), and the same seed gives the
  same result twice;
- the inputs are not modified, and the outputs are read-only;
- the ``ops`` class and the ``fn`` function give the same result;
- every output is what the schema declares (``check_output_specs``: data kind, number of
  dimensions, layout).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

import augkit
from augkit import fn
from augkit.frontends import operator_class
from augkit.operators.registry import REGISTRY
from augkit.pipeline import Pipeline

Batch = Sequence[np.ndarray]


def fn_operator(name: str) -> Callable[..., Any]:
    """``fn.<name>`` for a dotted name such as ``"readers.file"`` (or the plugin's ``fn``)."""
    target: Any = fn
    if REGISTRY[name].module == "plugin.pytorch":
        import augkit.plugin.pytorch

        target = augkit.plugin.pytorch.fn
    for part in name.split("."):
        target = getattr(target, part)
    return target


def run_operator(
    name: str,
    inputs: Sequence[Batch],
    *,
    layout: str | Sequence[str] = "",
    args: dict[str, Any] | None = None,
    arg_inputs: dict[str, Sequence[Any]] | None = None,
    num_threads: int = 1,
    seed: int = 1234,
    iterations: int = 1,
    device: str = "cpu",
    style: str = "fn",
    batch_size: int | None = None,
) -> list[tuple[augkit.TensorList, ...]]:
    """Run operator ``name`` on ``inputs`` (one list of samples per input) for ``iterations``
    iterations; returns the outputs of each iteration as a tuple of TensorLists."""
    args = dict(args or {})
    arg_inputs = arg_inputs or {}
    layouts = [layout] * len(inputs) if isinstance(layout, str) else list(layout)
    if batch_size is None:
        batch_size = len(inputs[0]) if inputs else len(next(iter(arg_inputs.values())))
    device_id = None if device == "cpu" else 0
    pipe = Pipeline(batch_size=batch_size, num_threads=num_threads, device_id=device_id, seed=seed)
    with pipe:
        nodes = [
            fn.external_source(source=lambda batch=batch: list(batch), layout=lay)
            for batch, lay in zip(inputs, layouts, strict=True)
        ]
        for key, values in arg_inputs.items():
            args[key] = fn.external_source(
                source=lambda values=values: [np.asarray(v) for v in values]
            )
        if device != "cpu":
            args["device"] = device
        if style == "fn":
            out = fn_operator(name)(*nodes, **args)
        else:
            out = operator_class(REGISTRY[name])(**args)(*nodes)
        outs = out if isinstance(out, tuple) else (out,)
        pipe.set_outputs(*outs)
    runs = [pipe.run() for _ in range(iterations)]
    check_output_specs(pipe)
    return runs


def check_output_specs(pipe: Pipeline) -> None:
    """Every node output of the pipeline's last run against what its schema declared when the
    pipeline was built (``OperatorSchema.output_kinds``): the kind it carries, and where
    declared, every sample's number of dimensions and the batch's layout."""
    executor = pipe._runner.executor
    for data, batch in pipe._runner.last.items():
        spec = executor.specs.get(data)
        if spec is None:
            assert batch.kind.is_generic, f"{data.name}: kind {batch.kind}, declared none"
            continue
        assert batch.kind == spec.kind, f"{data.name}: kind {batch.kind}, declared {spec.kind}"
        if spec.layout is not None:
            assert batch.layout() == spec.layout, (
                f"{data.name}: layout {batch.layout()!r}, declared {spec.layout!r}"
            )
        if spec.ndim is not None:
            ranks = {len(shape) for shape in batch.shape()}
            assert ranks <= {spec.ndim}, f"{data.name}: ranks {ranks}, declared {spec.ndim}"


def check_operator(
    name: str,
    inputs: Sequence[Batch],
    reference: Callable[..., Any] | None,
    *,
    layout: str | Sequence[str] = "",
    args: dict[str, Any] | None = None,
    arg_inputs: dict[str, Sequence[Any]] | None = None,
    atol: float = 0,
    mean_atol: float | None = None,
    expected_layout: str | None = None,
    iterations: int = 2,
    batch_size: int | None = None,
) -> list[augkit.TensorList]:
    """Check operator ``name`` (see the module docstring); returns the first iteration's outputs.

    Args:
        reference: ``reference(*samples, **sample_args) -> array | tuple`` for one sample, where
            ``sample_args`` are ``args`` plus that sample's ``arg_inputs``; ``None`` for random
            operators, which are checked for determinism only.
        atol: largest allowed absolute difference to the reference, per element.
        mean_atol: if given, largest allowed mean absolute difference per sample (and ``atol``
            still bounds every element).
    """
    originals = [[np.array(s, copy=True) for s in batch] for batch in inputs]
    kwargs = dict(
        layout=layout,
        args=args,
        arg_inputs=arg_inputs,
        iterations=iterations,
        batch_size=batch_size,
    )
    one = run_operator(name, inputs, num_threads=1, **kwargs)
    three = run_operator(name, inputs, num_threads=3, **kwargs)
    again = run_operator(name, inputs, num_threads=1, **kwargs)
    as_class = run_operator(name, inputs, num_threads=2, style="ops", **kwargs)
    for other in (three, again, as_class):
        _assert_same(one, other, name)
    for batch, original in zip(inputs, originals, strict=True):
        for sample, before in zip(batch, original, strict=True):
            np.testing.assert_array_equal(sample, before, err_msg=f"{name} modified its input")
    outputs = one[0]
    for out in outputs:
        for sample in out:
            assert not np.asarray(sample).flags.writeable, f"{name}: output is writable"
        if expected_layout is not None:
            assert out.layout() == expected_layout, (name, out.layout())
    if reference is not None:
        for i in range(len(outputs[0])):
            sample_args = dict(args or {})
            for key, values in (arg_inputs or {}).items():
                sample_args[key] = values[i]
            expected = reference(*[batch[i] for batch in inputs], **sample_args)
            expected = expected if isinstance(expected, tuple) else (expected,)
            for k, (out, want) in enumerate(zip(outputs, expected, strict=True)):
                got = out.at(i)
                assert got.shape == np.shape(want), (
                    f"{name}: sample {i} output {k} has shape {got.shape}, reference "
                    f"{np.shape(want)}"
                )
                assert got.dtype == np.asarray(want).dtype, (name, got.dtype, want.dtype)
                diff = np.abs(got.astype(np.float64) - np.asarray(want, np.float64))
                if diff.size:
                    assert diff.max() <= atol or mean_atol is not None, (
                        f"{name}: sample {i} output {k} differs by up to {diff.max()} "
                        f"(allowed {atol})"
                    )
                    if mean_atol is not None:
                        assert diff.mean() <= mean_atol, (
                            f"{name}: sample {i} mean difference {diff.mean()} > {mean_atol}"
                        )
                        assert diff.max() <= max(atol, mean_atol), (
                            f"{name}: sample {i} differs by up to {diff.max()}"
                        )
    return list(outputs)


def _assert_same(a: list[tuple[Any, ...]], b: list[tuple[Any, ...]], name: str) -> None:
    for it, (outs_a, outs_b) in enumerate(zip(a, b, strict=True)):
        for k, (x, y) in enumerate(zip(outs_a, outs_b, strict=True)):
            assert x.shape() == y.shape(), f"{name}: iteration {it} output {k} shapes differ"
            for i in range(len(x)):
                np.testing.assert_array_equal(
                    x.at(i), y.at(i), err_msg=f"{name}: iteration {it} output {k} sample {i}"
                )


def arg_batch(values: Sequence[Any]) -> list[np.ndarray]:
    """Per-sample argument values as one batch for ``fn.external_source``, whose samples must
    share a rank: where scalars and pairs are mixed (``anchor=-1`` for one sample, ``(0, 4)``
    for another, as eager mode takes them), the scalars are broadcast to the pairs' shape,
    which is what a scalar means for such arguments."""
    arrays = [np.asarray(v) for v in values]
    shapes = {a.shape for a in arrays if a.ndim}
    if len(shapes) == 1 and any(a.ndim == 0 for a in arrays):
        (shape,) = shapes
        arrays = [np.broadcast_to(a, shape).copy() if a.ndim == 0 else a for a in arrays]
    return arrays


def run_on_both_devices(
    name: str,
    inputs: Sequence[Sequence[np.ndarray]],
    *,
    layouts: Sequence[str],
    args: dict[str, Any] | None = None,
    arg_inputs: dict[str, list[Any]] | None = None,
) -> tuple[Any, Any]:
    """Operator ``name`` on ``inputs`` (one list of per-sample arrays per positional input,
    each with its layout) with device="cpu" and with device="gpu", in pipelines of the same
    seed on a CUDA device. Returns the two output batches (CPU, GPU), having checked that the
    GPU one is on the GPU with the CPU one's layout and dtype."""
    results = {}
    for device in ("cpu", "gpu"):
        pipe = Pipeline(
            batch_size=len(inputs[0]),
            num_threads=2,
            device_id=0 if device == "gpu" else None,
            seed=7,
        )
        with pipe:
            data = [
                fn.external_source(source=lambda x=x: list(x), layout=layout)
                for x, layout in zip(inputs, layouts, strict=True)
            ]
            kwargs = dict(args or {})
            for key, values in (arg_inputs or {}).items():
                kwargs[key] = fn.external_source(source=lambda values=values: arg_batch(values))
            pipe.set_outputs(fn_operator(name)(*data, device=device, **kwargs))
        (results[device],) = pipe.run()
    cpu, gpu = results["cpu"], results["gpu"]
    assert gpu.device == "gpu", f"{name}: the GPU run produced {gpu.device} data"
    assert gpu.layout() == cpu.layout() and gpu.dtype == cpu.dtype
    return cpu, gpu


def gpu_matches_cpu(
    name: str,
    inputs: list[np.ndarray],
    *,
    layout: str = "",
    args: dict[str, Any] | None = None,
    arg_inputs: dict[str, list[Any]] | None = None,
    atol: float = 0.0,
) -> None:
    """Run operator ``name`` with device="cpu" and device="gpu" in a pipeline on a CUDA device
    and assert that the two give the same batch: equal integers, floats within 1e-6, or, with
    ``atol``, any value within ``atol`` (a GPU kernel that computes in float32 where the CPU
    kernel uses OpenCV's fixed point: the tolerance the CPU kernel holds against DALI)."""
    cpu, gpu = run_on_both_devices(
        name, [inputs], layouts=[layout], args=args, arg_inputs=arg_inputs
    )
    for i in range(len(inputs)):
        want, got = cpu.at(i), gpu.at(i)
        assert got.shape == want.shape, (name, i, got.shape, want.shape)
        if atol:
            diff = np.abs(got.astype(np.float64) - want.astype(np.float64))
            assert diff.max(initial=0) <= atol, f"{name}: sample {i} differs by {diff.max()}"
        elif want.dtype.kind == "f":
            np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6, err_msg=f"sample {i}")
        else:
            np.testing.assert_array_equal(got, want, err_msg=f"{name}: sample {i}")


# --- GPU kernels checked without a GPU (issue 18) ---------------------------------------------


class _CupyBranches:
    """NumPy under another name: ``xp is np`` is False, so a kernel given it takes the code
    CuPy takes, with NumPy's functions and arrays."""

    def __getattr__(self, name: str) -> Any:
        return getattr(np, name)


CUPY_BRANCHES = _CupyBranches()
"""An array module for ``run_gpu_kernel`` that turns every ``xp is np`` shortcut off."""


def eager_operator(name: str) -> Callable[..., Any]:
    """``augkit.eager.<name>`` for a dotted name such as ``"noise.gaussian"``."""
    from augkit import eager

    target: Any = eager
    for part in name.split("."):
        target = getattr(target, part)
    return target


def run_gpu_kernel(
    monkeypatch: Any,
    impl: type,
    name: str,
    images: Sequence[np.ndarray],
    xp: Any = CUPY_BRANCHES,
    *,
    layout: str = "",
    args: dict[str, Any] | None = None,
    more_inputs: Sequence[Any] = (),
) -> list[np.ndarray]:
    """Operator ``name`` (dotted names too: "noise.gaussian") through ``augkit.eager`` (the
    argument handling of a pipeline) with its ``gpu`` kernel (a method of ``impl``) in place
    of its ``cpu`` kernel, on NumPy arrays, ``backend.array_module`` answering ``xp``: the GPU
    kernel's code checked without a GPU. ``images`` is the first input, ``more_inputs`` the
    others (``fn.cat``; lists of arrays take ``layout``, TensorLists keep theirs); ``args``
    may hold lists (per-sample values). Asserts that the gpu kernel ran once per sample.
    Returns the outputs as NumPy arrays."""
    from augkit import backend
    from augkit.tensors import TensorList

    calls = []
    gpu = impl.gpu

    def kernel(self: Any, *samples: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return gpu(self, *samples, **kwargs)

    with monkeypatch.context() as patch:
        patch.setattr(impl, "cpu", kernel)
        patch.setattr(backend, "array_module", lambda x: xp)
        function = eager_operator(name)
        batches = [
            x if isinstance(x, TensorList) else TensorList(list(x), layout)
            for x in (images, *more_inputs)
        ]
        out = function(*batches, **(args or {}))
    assert len(calls) == len(images), f"{name}: the gpu kernel did not run once per sample"
    return [np.array(out.at(i)) for i in range(len(images))]


def distance(want: Sequence[np.ndarray], got: Sequence[np.ndarray]) -> tuple[float, float]:
    """(largest |difference|, largest per-sample mean |difference|) of two batches whose
    samples must have equal shapes and dtypes."""
    largest = mean = 0.0
    for i, (a, b) in enumerate(zip(want, got, strict=True)):
        assert a.shape == b.shape and a.dtype == b.dtype, (i, a.shape, b.shape, a.dtype, b.dtype)
        diff = np.abs(a.astype(np.float64) - b.astype(np.float64))
        if diff.size:
            largest, mean = max(largest, float(diff.max())), max(mean, float(diff.mean()))
    return largest, mean


def within(
    want: Sequence[np.ndarray], got: Sequence[np.ndarray], max_diff: float, mean_diff: float
) -> bool:
    """Whether ``got`` is within ``max_diff`` of ``want`` everywhere and within ``mean_diff``
    on average in every sample (``distance``)."""
    largest, mean = distance(want, got)
    return largest <= max_diff and mean <= mean_diff


def per_sample(*values: Any, dtype: Any = np.float32) -> list[np.ndarray]:
    """One array per sample: a per-sample argument's values."""
    return [np.asarray(v, dtype) for v in values]


# --- the cases of tests/operators/test_gpu_*.py ------------------------------------------------
# Inputs made from the session's photos (uint8 HWC RGB of different sizes).


def as_uint8(photos: list[np.ndarray]) -> list[np.ndarray]:
    return list(photos)


def as_float(photos: list[np.ndarray]) -> list[np.ndarray]:
    return [(p / np.float32(255)).astype(np.float32) for p in photos]


def as_int16(photos: list[np.ndarray]) -> list[np.ndarray]:
    return [p.astype(np.int16) * 3 - 200 for p in photos]


def as_uint16(photos: list[np.ndarray]) -> list[np.ndarray]:
    return [p.astype(np.uint16) * 257 for p in photos]


def as_chw(photos: list[np.ndarray]) -> list[np.ndarray]:
    return [np.ascontiguousarray(p.transpose(2, 0, 1)) for p in photos]


def as_gray(photos: list[np.ndarray]) -> list[np.ndarray]:
    """HWC with one channel (the green one)."""
    return [p[..., 1:2].copy() for p in photos]


def as_sequences(photos: list[np.ndarray]) -> list[np.ndarray]:
    """FHWC: three frames of a photo's corners each (the photos differ in size)."""
    return [np.stack([p[:120, :160], p[40:160, :160], p[-120:, -160:]]) for p in photos]


@dataclass
class GpuCase:
    """One call of an operator whose ``gpu`` kernel is checked against its ``cpu`` kernel on
    NumPy (``run_gpu_kernel``), within ``max_diff`` everywhere and ``mean_diff`` on average
    (0, 0: equal), and in a pipeline on a CUDA device (``gpu_matches_cpu``). A file whose
    operators take more inputs subclasses it and overrides ``more_inputs``."""

    id: str
    name: str
    """The operator, dotted as in ``eager``: "noise.gaussian"."""
    impl: type
    inputs: Callable[[list[np.ndarray]], list[np.ndarray]] = as_uint8
    layout: str = "HWC"
    args: dict[str, Any] = field(default_factory=dict)
    arg_inputs: dict[str, list[Any]] = field(default_factory=dict)
    """Per-sample arguments, one value per sample."""
    max_diff: float = 0.0
    mean_diff: float = 0.0

    def call_args(self, overrides: dict[str, Any]) -> dict[str, Any]:
        """The call's arguments, per-sample ones as lists, ``overrides`` replacing them."""
        return {**self.args, **{k: list(v) for k, v in self.arg_inputs.items()}, **overrides}

    def more_inputs(self, images: list[np.ndarray]) -> list[Any]:
        """The positional inputs after ``images`` (batches)."""
        return []

    def run_cpu(self, images: list[np.ndarray], **overrides: Any) -> list[np.ndarray]:
        """The case through ``augkit.eager`` with its CPU kernel."""
        from augkit.tensors import TensorList

        first = TensorList(list(images), self.layout)
        args = self.call_args(overrides)
        out = eager_operator(self.name)(first, *self.more_inputs(images), **args)
        return [np.array(out.at(i)) for i in range(len(images))]

    def run_gpu(
        self, monkeypatch: Any, images: list[np.ndarray], xp: Any, **overrides: Any
    ) -> list[np.ndarray]:
        """The case with the operator's ``gpu`` kernel in place of its ``cpu`` kernel, on
        NumPy arrays, the kernel's array module being ``xp`` (``run_gpu_kernel``)."""
        return run_gpu_kernel(
            monkeypatch,
            self.impl,
            self.name,
            images,
            xp,
            layout=self.layout,
            args=self.call_args(overrides),
            more_inputs=self.more_inputs(images),
        )

    def within(self, want: list[np.ndarray], got: list[np.ndarray]) -> bool:
        return within(want, got, self.max_diff, self.mean_diff)

    def assert_gpu_matches_cpu(
        self, photos: list[np.ndarray], args: dict[str, Any] | None = None
    ) -> None:
        """``gpu_matches_cpu`` on a CUDA device, within ``max_diff`` (``args``: instead of the
        case's own)."""
        gpu_matches_cpu(
            self.name,
            self.inputs(photos),
            layout=self.layout,
            args=self.args if args is None else args,
            arg_inputs=self.arg_inputs,
            atol=self.max_diff,
        )

    def assert_matches(self, want: list[np.ndarray], got: list[np.ndarray]) -> None:
        largest, mean = distance(want, got)  # also: equal shapes and dtypes
        assert largest <= self.max_diff, (
            f"{self.id}: largest difference {largest} > {self.max_diff}"
        )
        assert mean <= self.mean_diff, f"{self.id}: mean difference {mean} > {self.mean_diff}"

    def assert_not_vacuous(
        self, photos: list[np.ndarray], monkeypatch: Any, wrong: dict[str, Any]
    ) -> None:
        """The GPU kernel meets the case's bound with the right arguments and leaves it given
        a slightly ``wrong`` one: the bound can fail."""
        images = self.inputs(photos)
        want = self.run_cpu(images)
        assert self.within(want, self.run_gpu(monkeypatch, images, CUPY_BRANCHES))
        assert not self.within(want, self.run_gpu(monkeypatch, images, CUPY_BRANCHES, **wrong))


def case_by_id(cases: Sequence[GpuCase], case_id: str) -> Any:
    return next(c for c in cases if c.id == case_id)
