"""Bad arguments (issue 6): every operator of the registry, every argument, refused when the
operator is created (``fn.<op>(...)`` or ``ops.<Class>(...)``, before any pipeline runs) with
an ``ArgumentError`` that names the operator, the argument and the values it takes; a GPU
operator without a GPU is a ``DeviceError`` at build; an input of a known wrong kind (a reader's
encoded bytes given to resize) is a ``GraphError`` at build.

The tables are generated from the registry, so a new operator or argument is covered as soon as
it is registered.
"""

from __future__ import annotations

import functools
import math
import pathlib
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import augkit.plugin.pytorch as dalitorch
from augkit import eager, fn, ops, pipeline_def, types
from augkit.backend import gpu_unavailable_reason
from augkit.errors import ArgumentError, DeviceError, GraphError
from augkit.operators.registry import REGISTRY, Arg, OperatorSchema, _bounds
from augkit.pipeline import Pipeline
from tests.operator_cases import CASES
from tests.operator_check import fn_operator

IMAGES = pathlib.Path(__file__).resolve().parents[1] / "data" / "images"
PUBLIC = [s for s in REGISTRY.values() if s.public]

# What a converter's own message says when it names the values it takes (converters written in
# an operator's module without ``described``: the reader's and the decoder's).
NAMES_ALLOWED = ("expected", "must be", "one of", "allowed", "supported", "only")


def _ops_class(schema: OperatorSchema) -> Callable[..., Any]:
    target: Any = dalitorch if schema.module == "plugin.pytorch" else ops
    for part in schema.class_name.split("."):
        target = getattr(target, part)
    return target


def _styles(schema: OperatorSchema) -> dict[str, Callable[..., Any]]:
    """The two ways to create the operator with keyword arguments only (no inputs: an argument
    error comes from the constructor, before any input is looked at)."""
    cls = _ops_class(schema)
    function = fn_operator(schema.name)
    return {"ops": lambda **kw: cls(**kw), "fn": lambda **kw: function(**kw)}


def _numeric(arg: Arg) -> bool:
    return (arg.allowed or "").startswith(("a number", "an integer", "a list of", "(low, high)"))


def _wrong_types(arg: Arg) -> list[Any]:
    """Values of a type the argument never takes."""
    values: list[Any] = [object(), 1j]
    allowed = arg.allowed or ""
    if _numeric(arg) or allowed.startswith(("True or False", "0 or 1", "a function")):
        values.append("not-a-value")
    return values


def _out_of_range(arg: Arg) -> list[Any]:
    """Numbers just outside the converter's range, as a scalar and as 1, 2 and 3-element lists
    (whichever form the argument takes, one of them reaches the range check), plus NaN and
    infinity for numbers."""
    low = getattr(arg.convert, "low", None)
    high = getattr(arg.convert, "high", None)
    # Just outside, by 1 or (for bounds like float32's largest number) by the bound itself.
    values: list[Any] = [
        b + step * max(1, abs(b)) for b, step in ((low, -1), (high, 1)) if b is not None
    ]
    if (arg.allowed or "").startswith("a number"):
        values += [math.nan, math.inf]
    return values


def _cases(values_of: Callable[[Arg], list[Any]]) -> list[Any]:
    cases = []
    for schema in PUBLIC:
        for arg in schema.arguments.values():
            if arg.name == "device":  # refused by its own check: test_unsupported_device
                continue
            for k, value in enumerate(values_of(arg)):
                cases.append(pytest.param(schema, arg, value, id=f"{schema.name}-{arg.name}-{k}"))
    return cases


def _assert_names_everything(
    message: str, schema: OperatorSchema, arg: Arg, extra: tuple[str, ...] = ()
) -> None:
    assert schema.class_name in message, f"the operator is not named: {message}"
    assert f"'{arg.name}'" in message, f"the argument is not named: {message}"
    if arg.allowed:
        low = getattr(arg.convert, "low", None)
        high = getattr(arg.convert, "high", None)
        bounds = _bounds(low, high)
        assert (
            arg.allowed in message
            or (bounds and bounds in message)
            or any(e in message for e in extra)
        ), f"the allowed values ({arg.allowed}) are not named: {message}"
    else:
        assert any(w in message for w in NAMES_ALLOWED), f"allowed values not named: {message}"


def test_every_argument_says_what_it_takes() -> None:
    """Arguments without a converter take anything; every public one has one (a default of a
    plain type gives it one, see ``Arg``)."""
    unchecked = [
        f"{s.name}.{a.name}"
        for s in PUBLIC
        for a in s.arguments.values()
        if a.convert is None and a.name != "device"
    ]
    assert not unchecked, f"arguments that take any value: {unchecked}"


@pytest.mark.parametrize("style", ["fn", "ops"])
@pytest.mark.parametrize(("schema", "arg", "value"), _cases(_wrong_types))
def test_wrong_type_is_refused_at_construction(
    schema: OperatorSchema, arg: Arg, value: Any, style: str
) -> None:
    with pytest.raises(ArgumentError) as info:
        _styles(schema)[style](**{arg.name: value})
    _assert_names_everything(str(info.value), schema, arg)


@pytest.mark.parametrize("style", ["fn", "ops"])
@pytest.mark.parametrize(("schema", "arg", "value"), _cases(_out_of_range))
def test_out_of_range_is_refused_at_construction(
    schema: OperatorSchema, arg: Arg, value: Any, style: str
) -> None:
    make = _styles(schema)[style]
    # A scalar, or a list of 1, 2 or 3 of it: the argument refuses each form (its length or
    # its range), and the form it takes is refused for the range, in words.
    messages = []
    for form in (value, [value], [value] * 2, [value] * 3):
        with pytest.raises(ArgumentError) as info:
            make(**{arg.name: form})
        messages.append(str(info.value))
    bounds = _bounds(getattr(arg.convert, "low", None), getattr(arg.convert, "high", None))
    words = [w for w in (bounds, "finite", "positive") if w]
    ranged = [m for m in messages if any(w in m for w in words)]
    assert ranged, f"no form of {value!r} was refused for its range: {messages}"
    _assert_names_everything(ranged[0], schema, arg, extra=("finite", "positive"))


def test_probability_two_is_refused_in_words() -> None:
    with pytest.raises(ArgumentError) as info:
        fn.random.coin_flip(probability=2)
    message = str(info.value)
    assert "random.CoinFlip" in message and "'probability'" in message
    assert "between 0.0 and 1.0" in message and "got 2" in message


def _near_miss(schema: OperatorSchema) -> tuple[str, str]:
    """A misspelling of one of the operator's own arguments (or a common one): an extra
    letter, as a typo makes."""
    name = (schema.args[0] if schema.args else schema.arguments["seed"]).name
    return name + name[-1], name


@pytest.mark.parametrize("style", ["fn", "ops"])
@pytest.mark.parametrize("schema", PUBLIC, ids=lambda s: s.name)
def test_unknown_argument_suggests_the_near_miss(schema: OperatorSchema, style: str) -> None:
    typo, meant = _near_miss(schema)
    make = _styles(schema)[style]
    with pytest.raises(ArgumentError) as info:
        make(**{typo: 1})
    message = str(info.value)
    assert schema.class_name in message and f"unknown argument '{typo}'" in message
    assert f"Did you mean '{meant}'?" in message, message
    with pytest.raises(ArgumentError) as info:
        make(zzz_not_an_argument=1)
    message = str(info.value)
    assert "Did you mean" not in message and "Valid arguments:" in message
    assert all(a in message for a in schema.arguments), "not every valid argument is listed"


@pytest.mark.parametrize("style", ["fn", "ops"])
@pytest.mark.parametrize("schema", PUBLIC, ids=lambda s: s.name)
def test_unsupported_device(schema: OperatorSchema, style: str) -> None:
    for device in ("tpu", *(d for d in ("gpu", "mixed") if d not in schema.devices)):
        with pytest.raises(ArgumentError) as info:
            _styles(schema)[style](device=device)
        message = str(info.value)
        assert schema.class_name in message and f"device={device!r}" in message
        assert all(repr(d) in message for d in schema.devices), message


# --- a GPU operator where there is no GPU: DeviceError at build ---------------------------------

GPU_OPERATORS = [s.name for s in PUBLIC if s.name in CASES and ({"gpu", "mixed"} & set(s.devices))]


def _gpu_pipeline(name: str, device_id: int | None) -> Pipeline:
    schema = REGISTRY[name]
    device = "mixed" if "mixed" in schema.devices else "gpu"
    case = CASES[name]

    def op(other: str) -> Callable[..., Any]:
        function = fn_operator(other)
        return functools.partial(function, device=device) if other == name else function

    @pipeline_def(batch_size=2, num_threads=1, device_id=device_id, seed=1)
    def define() -> Any:
        if case.input == "jpegs":
            x = fn.readers.file(file_root=str(IMAGES))[0]
        else:
            x = fn.external_source(source=lambda: [np.zeros((4, 4, 3), np.uint8)] * 2, layout="HWC")
        return case.body(op, x)

    return define()


@pytest.mark.parametrize("device_id", [None, 0])
@pytest.mark.parametrize("name", GPU_OPERATORS)
def test_gpu_operator_without_gpu_is_a_device_error_at_build(
    name: str, device_id: int | None
) -> None:
    if device_id is not None and gpu_unavailable_reason() is None:
        pytest.skip("this machine has a GPU")
    pipe = _gpu_pipeline(name, device_id)  # defining it is fine; building it is not
    try:
        with pytest.raises(DeviceError) as info:
            pipe.build()
    finally:
        pipe.close()
    message = str(info.value)
    short = REGISTRY[name].class_name.rsplit(".", 1)[-1]
    assert short in message and "needs a GPU" in message and "device='cpu'" in message


@pytest.mark.skipif(gpu_unavailable_reason() is None, reason="this machine has a GPU")
def test_gpu_operator_without_gpu_in_eager_and_debug_mode() -> None:
    """Eager calls and debug pipelines run an operator when it is called: the DeviceError comes
    then, naming the operator (not an OperatorError of an internal copy to the GPU)."""
    image = np.zeros((4, 4, 3), np.uint8)
    with pytest.raises(DeviceError, match=r"^Flip \(device='gpu'\) needs a GPU, but "):
        eager.flip(image, device="gpu")
    with pytest.raises(DeviceError, match=r"^decoders.Image \(device='mixed'\) needs a GPU"):
        eager.decoders.image(np.zeros(8, np.uint8), device="mixed")

    @pipeline_def(batch_size=1, num_threads=1, device_id=0, seed=1, debug=True)
    def define() -> Any:
        return fn.crop(fn.external_source(source=lambda: [image]), crop=(2, 2), device="gpu")

    pipe = define()
    try:
        with pytest.raises(DeviceError, match="Crop"):
            pipe.run()
    finally:
        pipe.close()


def test_none_counts_as_not_given() -> None:
    """As in DALI: an argument given None takes its default (a None std would otherwise reach
    the kernel), and a required one given None is missing."""
    image = np.full((2, 2, 3), 100, np.uint8)
    default = eager.crop_mirror_normalize(image, seed=1)
    np.testing.assert_array_equal(eager.crop_mirror_normalize(image, std=None, seed=1), default)
    with pytest.raises(ArgumentError, match="missing required argument 'angle'"):
        eager.rotate(image, angle=None)
    assert ops.Flip(device=None).device == "cpu"


# --- inputs of a known wrong kind: GraphError at build ------------------------------------------


def _reader() -> tuple[Any, Any]:
    return fn.readers.file(file_root=str(IMAGES))


def _build(body: Callable[[], Any]) -> Pipeline:
    @pipeline_def(batch_size=2, num_threads=1, device_id=None, seed=1)
    def define() -> Any:
        return body()

    pipe = define()
    pipe.build()
    return pipe


WRONG_KINDS = {
    "resize of encoded bytes": (
        lambda: fn.resize(_reader()[0], size=8),
        ["fn.resize", "input 0", "1-D encoded bytes from readers.file", "HWC", "3 dimensions"],
    ),
    "crop_mirror_normalize of labels": (
        lambda: fn.crop_mirror_normalize(_reader()[1]),
        ["fn.crop_mirror_normalize", "kind labels", "travel with their boxes"],
    ),
    "flip of encoded bytes": (
        lambda: fn.flip(_reader()[0]),
        ["fn.flip", "encoded bytes", "2 or more dimensions"],
    ),
    "crop of encoded bytes": (
        lambda: fn.crop(_reader()[0], crop=(4, 4)),
        ["fn.crop", "encoded bytes"],
    ),
    "rotate of encoded bytes through cast": (
        lambda: fn.rotate(fn.cast(_reader()[0], dtype=types.FLOAT), angle=10),
        ["fn.rotate", "(Cast_", "encoded bytes", "layout HWC"],
    ),
    "brightness_contrast of encoded bytes": (
        lambda: fn.brightness_contrast(_reader()[0], brightness=1.5),
        ["fn.brightness_contrast", "encoded bytes"],
    ),
    "decoding labels": (
        lambda: fn.decoders.image(_reader()[1]),
        ["fn.decoders.image", "labels", "expects encoded bytes"],
    ),
    "decoding decoded images": (
        lambda: fn.decoders.image(fn.decoders.image(_reader()[0])),
        ["decoded HWC images", "expects encoded bytes"],
    ),
    "rotate of CHW output of crop_mirror_normalize": (
        lambda: fn.rotate(fn.crop_mirror_normalize(fn.decoders.image(_reader()[0])), angle=5),
        ["layout CHW", "layout HWC"],
    ),
    "flip of a scalar random value": (
        lambda: fn.flip(fn.random.uniform()),
        ["0-D random values", "2 or more dimensions"],
    ),
}


@pytest.mark.parametrize("case", WRONG_KINDS, ids=str)
def test_input_of_a_known_wrong_kind_is_refused_at_build(case: str) -> None:
    body, words = WRONG_KINDS[case]
    with pytest.raises(GraphError) as info:
        _build(body)
    message = str(info.value)
    for word in words:
        assert word in message, f"{word!r} is not in: {message}"
    if "encoded bytes from" in message:
        assert "decode them first with fn.decoders.image" in message


RIGHT_KINDS = {
    "decoded, then every image operator": lambda: fn.crop_mirror_normalize(
        fn.rotate(
            fn.flip(
                fn.crop(
                    fn.brightness_contrast(fn.resize(fn.decoders.image(_reader()[0]), size=16)),
                    crop=(8, 8),
                )
            ),
            angle=3,
        )
    ),
    # Unknown kinds pass: what a Python function or an external source gives is not known.
    "python_function of encoded bytes": lambda: fn.resize(
        fn.python_function(_reader()[0], function=lambda x: x), size=8
    ),
    "external source": lambda: fn.resize(fn.external_source(source=lambda: [1, 2]), size=8),
    "arithmetic on encoded bytes": lambda: fn.flip(_reader()[0] * 1),
    "random values of image shape": lambda: fn.flip(fn.random.uniform(shape=(4, 4, 3))),
    "crop_mirror_normalize to HWC, then rotate": lambda: fn.rotate(
        fn.crop_mirror_normalize(fn.decoders.image(_reader()[0]), output_layout="HWC"), angle=3
    ),
}


@pytest.mark.parametrize("case", RIGHT_KINDS, ids=str)
def test_known_right_or_unknown_kinds_build(case: str) -> None:
    _build(RIGHT_KINDS[case]).close()


def test_every_case_of_the_registry_table_builds() -> None:
    """No false positives on the registry-wide examples of tests/test_debug.py."""
    for case in CASES.values():

        def body(case: Any = case) -> Any:
            jpegs, labels = _reader()
            x = jpegs if case.input == "jpegs" else fn.decoders.image(jpegs)
            return (*case.body(fn_operator, x), labels)

        _build(body).close()


# The three operators of DALI's RandomCropAttr share their window arguments
# (``crop_window.window_args``). DALI checks nothing on ``num_attempts``: a count <= 0 makes no
# attempt and gives the fall-back window (``random_crop_generator_util.cc``). With a fixed area
# of a quarter of a 100x100 image the fall-back is the 50x50 square, whatever is drawn.


def _png(image: np.ndarray) -> np.ndarray:
    import io

    from PIL import Image

    out = io.BytesIO()
    Image.fromarray(image).save(out, format="PNG")
    return np.frombuffer(out.getvalue(), np.uint8)


def _window_shape(name: str, num_attempts: int) -> tuple[int, int]:
    """The (h, w) of the window the operator takes from a 100x100 image."""
    args = {"num_attempts": num_attempts, "random_area": 0.25, "seed": 3}
    if name == "random_crop_generator":
        _, shape = eager.random_crop_generator([np.array([100, 100], np.int32)], **args)
        return tuple(int(v) for v in np.asarray(shape[0]))
    rows, cols = np.mgrid[0:100, 0:100].astype(np.uint8)
    image = np.stack([rows, cols, np.zeros_like(rows)], axis=-1)
    if name == "decoders.image_random_crop":
        (out,) = eager.decoders.image_random_crop([_png(image)], **args)
        return np.asarray(out).shape[:2]
    # resized to 50x50 with nearest neighbour: a 50x50 window comes out as it is, its rows and
    # columns consecutive; any other window would skip or repeat some
    (out,) = eager.random_resized_crop(
        [image], size=(50, 50), interp_type=types.INTERP_NN, antialias=False, **args
    )
    got = np.asarray(out)
    assert np.all(np.diff(got[:, 0, 0].astype(int)) == 1), got[:, 0, 0]
    assert np.all(np.diff(got[0, :, 1].astype(int)) == 1), got[0, :, 1]
    return 50, 50


@pytest.mark.parametrize("num_attempts", [0, -1])
@pytest.mark.parametrize(
    "name", ["random_resized_crop", "decoders.image_random_crop", "random_crop_generator"]
)
def test_no_crop_attempts_is_the_fall_back_window_alike(name: str, num_attempts: int) -> None:
    assert _window_shape(name, num_attempts) == (50, 50)
    required = {"size": 50} if name == "random_resized_crop" else {}
    _styles(REGISTRY[name])["ops"](num_attempts=num_attempts, **required)  # accepted
