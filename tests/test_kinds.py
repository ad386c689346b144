"""Kind names are an enum (issue 26 §1): ``kinds.KindName`` members equal today's strings, and
every kind a schema declares (accepted kinds, per-kind hints and dimensions, produced kinds,
family policies) is checked when the operator is declared, so a misspelt kind fails at import
with a message naming the operator and the kind.
"""

from __future__ import annotations

import pickle

import pytest

import augkit.operators  # noqa: F401  (fills the registry)
from augkit import fn, kinds
from augkit.errors import ArgumentError
from augkit.kinds import NAMES, KindName
from augkit.operators.registry import (
    REGISTRY,
    InputSpec,
    OperatorSchema,
    OutputSpec,
    declared_kinds,
    fixed_kinds,
    kind_policy,
    register,
)

STRINGS = (
    "image",
    "mask",
    "boxes",
    "keypoints",
    "polygons",
    "vertices",
    "labels",
    "encoded",
    "generic",
)


def _schema(**fields: object) -> OperatorSchema:
    return OperatorSchema(name="resize", class_name="Resize", impl=object, doc="", **fields)


def test_members_equal_their_strings() -> None:
    assert NAMES == STRINGS
    assert [m.value for m in KindName] == list(STRINGS)
    for member, text in zip(KindName, STRINGS, strict=True):
        assert member == text and text == member
        assert hash(member) == hash(text)
        assert {text: 1}[member] == 1 and {member: 1}[text] == 1
        assert str(member) == f"{member}" == text
        assert repr(member) == repr(text)  # messages read as before
        assert KindName(text) is member
        assert pickle.loads(pickle.dumps(member)) is member


def test_kinds_hold_members() -> None:
    for kind in (kinds.IMAGE, kinds.BOXES, kinds.boxes("xywh"), kinds.Kind("vertices")):
        assert type(kind.name) is KindName
    assert kinds.Kind("mask") == kinds.MASK
    assert kinds.parse(KindName.BOXES) is kinds.BOXES
    assert repr(kinds.boxes("xywh", relative=False)) == (
        "Kind('boxes', box_format='xywh', relative=False)"
    )


def test_unknown_kind_is_refused_with_the_closest() -> None:
    with pytest.raises(ValueError, match=r"unknown data kind 'imgae'.*Did you mean 'image'\?"):
        kinds.Kind("imgae")
    with pytest.raises(ValueError, match=r"unknown data kind 'boxs'.*Did you mean 'boxes'\?"):
        kinds.parse("boxs")


@pytest.mark.parametrize(
    ("spec", "part"),
    [
        (InputSpec("an image", kinds=("image", "imgae")), "kinds"),
        (InputSpec("an image", kinds=("image",), hints={"imgae": "..."}), "hints"),
        (InputSpec("an image", min_ndims={"imgae": 2}), "min_ndims"),
    ],
)
def test_schema_with_an_unknown_kind_fails_at_declaration(spec: InputSpec, part: str) -> None:
    with pytest.raises(ValueError) as info:
        _schema(max_inputs=2, accepts=[InputSpec("anything"), spec])
    message = str(info.value)
    assert message.startswith(f"Resize: unknown data kind 'imgae' in accepts (input 1, {part})")
    assert f"the kinds are {', '.join(STRINGS)}" in message
    assert "Did you mean 'image'?" in message


def test_a_module_declaring_an_unknown_kind_fails_at_import() -> None:
    source = (
        "from augkit.operators.registry import InputSpec, OperatorSchema, register\n"
        "register(OperatorSchema('kinds_test_op', 'KindsTestOp', object, '',\n"
        "                        accepts=[InputSpec('a mask', kinds=('masks',))]))\n"
    )
    with pytest.raises(ValueError, match=r"KindsTestOp: unknown data kind 'masks' in accepts"):
        exec(compile(source, "kinds_test_module", "exec"), {})
    assert "kinds_test_op" not in REGISTRY


def test_output_spec_kind_by_name() -> None:
    assert OutputSpec(kind="mask").kind is kinds.MASK
    assert OutputSpec(kind="boxes").kind is kinds.BOXES
    with pytest.raises(ValueError, match=r"OutputSpec: unknown data kind 'msk' in kind"):
        OutputSpec(kind="msk")
    with pytest.raises(TypeError, match="OutputSpec: kind must be a data kind"):
        OutputSpec(kind=3)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="fixed_kinds: expected OutputSpecs"):
        fixed_kinds(kinds.MASK)  # type: ignore[arg-type]


def test_declared_kinds() -> None:
    assert declared_kinds(["image", KindName.MASK], "Op") == (KindName.IMAGE, KindName.MASK)
    with pytest.raises(ValueError, match=r"^Op: unknown data kind 'x' in y;"):
        declared_kinds(["image", "x"], "Op", "y")


@pytest.mark.parametrize("family", ["geometric", "color"])
def test_kind_policies_are_members(family: str) -> None:
    policy = kind_policy(family)
    assert policy and all(type(k) is KindName for k in policy)
    assert policy["labels"] == policy[KindName.LABELS]


def test_every_registered_schema_declares_kind_members() -> None:
    """Walk the registry: every kind an operator accepts, hints about or always produces is a
    ``KindName`` member (and the walk finds some of each)."""
    seen = {"kinds": 0, "hints": 0, "min_ndims": 0, "produced": 0}
    for schema in REGISTRY.values():
        for spec in schema.accepts or ():
            if spec is None:
                continue
            for part in ("kinds", "hints", "min_ndims"):
                names = getattr(spec, part) or ()
                bad = [k for k in names if type(k) is not KindName]
                assert not bad, f"{schema.name}: accepts {part} {bad!r} are no KindName"
                seen[part] += len(names)
        for out in getattr(schema.output_kinds, "specs", ()):
            if out is not None:
                assert type(out.kind.name) is KindName, schema.name
                seen["produced"] += 1
    assert all(seen.values()), seen


def test_register_refuses_before_registering() -> None:
    with pytest.raises(ValueError, match="unknown data kind"):
        register(_schema(accepts=[InputSpec("x", kinds=("imgae",))]))
    assert REGISTRY["resize"].class_name == "Resize"


@pytest.mark.parametrize("make", ["python_function", "external_source"])
def test_user_kind_argument_names_the_argument(make: str) -> None:
    with pytest.raises(ArgumentError) as info:
        if make == "python_function":
            fn.python_function(fn.external_source(lambda: [1]), function=lambda x: x, kind="imgae")
        else:
            fn.external_source(lambda: [1], kind="imgae")
    message = str(info.value)
    assert "argument 'kind'" in message and "unknown data kind 'imgae'" in message
    assert "Did you mean 'image'?" in message
