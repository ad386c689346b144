"""fn.transforms.*: the matrices against float64 formulas written here, what they do to points
(a rotation keeps its centre, a crop maps its corners), chaining and combine orders, 3-D,
per-sample arguments and errors."""

from __future__ import annotations

import math

import numpy as np
import pytest

from augkit import OperatorError, fn
from augkit.errors import ArgumentError
from tests.operator_check import check_operator, run_operator


def run(name: str, inputs=(), batch_size: int = 1, **args):
    """One batch of the transform's output (a list of matrices)."""
    arg_inputs = {k: v for k, v in args.items() if isinstance(v, list)}
    constants = {k: v for k, v in args.items() if not isinstance(v, list)}
    layouts = [""] * len(inputs)
    (out,) = run_operator(
        name,
        [list(batch) for batch in inputs],
        layout=layouts,
        args=constants,
        arg_inputs=arg_inputs,
        batch_size=batch_size if not inputs else None,
    )[0]
    return [out.at(i) for i in range(len(out))]


def homogeneous(m: np.ndarray) -> np.ndarray:
    n = m.shape[0]
    return np.vstack([np.asarray(m, np.float64), np.eye(n + 1)[n:]])


def apply(m: np.ndarray, points: np.ndarray) -> np.ndarray:
    """``m`` (n, n + 1) applied to points (k, n), in float64."""
    m = np.asarray(m, np.float64)
    return points @ m[:, :-1].T + m[:, -1]


def rotation64(angle: float, center=(0.0, 0.0)) -> np.ndarray:
    a = math.radians(angle)
    r = np.array([[math.cos(a), -math.sin(a)], [math.sin(a), math.cos(a)]])
    c = np.asarray(center, np.float64)
    return np.hstack([r, (c - r @ c)[:, None]])


# --- the matrices ------------------------------------------------------------------------------


def test_rotation_per_sample_against_float64():
    angles = [np.float32(a) for a in (0.0, 30.0, -125.5, 90.0)]
    centers = [np.array(c, np.float32) for c in ((0, 0), (10, 20), (-3.5, 7), (100, 50))]
    check_operator(
        "transforms.rotation",
        [],
        lambda angle, center: rotation64(float(angle), center).astype(np.float32),
        arg_inputs={"angle": angles, "center": centers},
        atol=2e-5,
        expected_layout="**",
    )


def test_rotation_keeps_its_centre_and_turns_x_towards_y():
    (m,) = run("transforms.rotation", angle=90.0, center=(5.0, 7.0))
    assert m.dtype == np.float32 and m.shape == (2, 3)
    np.testing.assert_allclose(apply(m, np.array([[5.0, 7.0]])), [[5.0, 7.0]], atol=1e-5)
    # +90 degrees: the x axis goes to the y axis (y up: counter-clockwise)
    np.testing.assert_allclose(apply(m, np.array([[6.0, 7.0]])), [[5.0, 8.0]], atol=1e-5)


def test_rotation_3d_is_a_rotation_about_its_axis():
    axis = np.array([1.0, 2.0, 3.0])
    (m,) = run("transforms.rotation", angle=40.0, axis=tuple(axis), center=(1.0, -2.0, 3.0))
    assert m.shape == (3, 4)
    r = m[:, :3].astype(np.float64)
    np.testing.assert_allclose(r @ r.T, np.eye(3), atol=1e-6)
    assert np.linalg.det(r) == pytest.approx(1.0, abs=1e-6)
    np.testing.assert_allclose(r @ axis, axis, atol=1e-5)  # the axis stays
    np.testing.assert_allclose(apply(m, np.array([[1.0, -2.0, 3.0]])), [[1, -2, 3]], atol=1e-5)
    # the angle between a vector across the axis and its image is the angle
    v = np.cross(axis, [0.0, 0.0, 1.0])
    cos = (r @ v) @ v / (v @ v)
    assert math.degrees(math.acos(cos)) == pytest.approx(40.0, abs=1e-3)
    # about z: the 2-D rotation
    (mz,) = run("transforms.rotation", angle=30.0, axis=(0.0, 0.0, 2.0))
    np.testing.assert_allclose(mz[:2, :2], rotation64(30.0)[:, :2], atol=1e-6)


def test_scale():
    (m,) = run("transforms.scale", scale=(2.0, 3.0), center=(5.0, 7.0))
    np.testing.assert_array_equal(m, [[2, 0, -5], [0, 3, -14]])
    (m,) = run("transforms.scale", scale=1.5, ndim=3)
    np.testing.assert_array_equal(m, np.hstack([np.eye(3) * 1.5, np.zeros((3, 1))]))
    (m,) = run("transforms.scale", scale=2.0)  # one factor, no ndim: 1-D, as DALI
    np.testing.assert_array_equal(m, [[2, 0]])
    per_sample = [np.array(s, np.float32) for s in ((2, 3), (0.5, -1))]
    out = run("transforms.scale", batch_size=2, scale=per_sample)
    np.testing.assert_array_equal(out[1], [[0.5, 0, 0], [0, -1, 0]])


def test_shear():
    (m,) = run("transforms.shear", shear=(0.1, 0.2), center=(3.0, 4.0))
    expected = np.array([[1, 0.1], [0.2, 1]])
    np.testing.assert_allclose(m[:, :2], expected, rtol=1e-6)
    np.testing.assert_allclose(m[:, 2], [3, 4] - expected @ [3, 4], rtol=1e-6)
    (m,) = run("transforms.shear", angles=(10.0, -20.0))
    np.testing.assert_allclose(
        m, [[1, math.tan(math.radians(10)), 0], [math.tan(math.radians(-20)), 1, 0]], rtol=1e-6
    )
    (m,) = run("transforms.shear", shear=(1.0, 2.0, 3.0, 4.0, 5.0, 6.0))
    np.testing.assert_array_equal(m, [[1, 1, 2, 0], [3, 1, 4, 0], [5, 6, 1, 0]])


def test_translation_and_crop():
    (m,) = run("transforms.translation", offset=(3.0, -4.0))
    np.testing.assert_array_equal(m, [[1, 0, 3], [0, 1, -4]])
    (m,) = run(
        "transforms.crop",
        from_start=(10.0, 20.0),
        from_end=(50.0, 60.0),
        to_start=(0.0, 0.0),
        to_end=(1.0, 2.0),
    )
    corners = apply(m, np.array([[10.0, 20.0], [50.0, 60.0], [30.0, 40.0]]))
    np.testing.assert_allclose(corners, [[0, 0], [1, 2], [0.5, 1]], atol=1e-6)
    (m,) = run("transforms.crop", from_start=(5.0, 2.0), from_end=(1.0, 10.0), absolute=True)
    np.testing.assert_allclose(m, [[0.25, 0, -0.25], [0, 0.125, -0.25]])
    (m,) = run("transforms.crop", from_start=(5.0, 2.0), from_end=(1.0, 10.0))
    np.testing.assert_allclose(m, [[-0.25, 0, 1.25], [0, 0.125, -0.25]])
    (m,) = run("transforms.crop")  # all defaults: 1-D identity
    np.testing.assert_array_equal(m, [[1, 0]])
    (m,) = run("transforms.crop", from_start=(5.0, 2.0), from_end=(5.0, 10.0))
    assert np.isinf(m[0, 0])  # an empty source range, as DALI


# --- chaining ----------------------------------------------------------------------------------


def test_chaining_applies_the_input_first():
    (scale,) = run("transforms.scale", scale=(2.0, 3.0))
    (m,) = run("transforms.translation", [[scale]], offset=(3.0, 4.0))
    np.testing.assert_array_equal(m, [[2, 0, 3], [0, 3, 4]])  # translate(scale(p))
    (m,) = run("transforms.translation", [[scale]], offset=(3.0, 4.0), reverse_order=True)
    np.testing.assert_array_equal(m, [[2, 0, 6], [0, 3, 12]])  # scale(translate(p))


def test_combine_orders():
    rng = np.random.default_rng(5)
    mats = [rng.uniform(-2, 2, (2, 3)).astype(np.float32) for _ in range(3)]
    points = rng.uniform(-10, 10, (6, 2))
    (m,) = run("transforms.combine", [[x] for x in mats])
    np.testing.assert_allclose(
        apply(m, points), apply(mats[2], apply(mats[1], apply(mats[0], points))), rtol=1e-5
    )
    (m,) = run("transforms.combine", [[x] for x in mats], reverse_order=True)
    np.testing.assert_allclose(
        apply(m, points), apply(mats[0], apply(mats[1], apply(mats[2], points))), rtol=1e-5
    )
    assert m.dtype == np.float32


def test_chain_in_a_pipeline_with_random_angles():
    """The usual DALI idiom: per-sample random rotations, chained, feeding warp_affine."""
    from augkit import Pipeline

    pipe = Pipeline(batch_size=3, num_threads=2, device_id=None, seed=3)
    with pipe:
        angle = fn.random.uniform(range=(-30, 30))
        m = fn.transforms.rotation(angle=angle, center=(10.0, 10.0))
        m = fn.transforms.translation(m, offset=(1.0, 2.0))
        pipe.set_outputs(m, angle)
    mats, angles = pipe.run()
    assert mats.layout() == "**"
    for i in range(3):
        expected = rotation64(float(angles.at(i)), (10.0, 10.0))
        expected[:, 2] += (1.0, 2.0)
        np.testing.assert_allclose(mats.at(i), expected, atol=1e-5)


# --- errors ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "inputs", "args", "message"),
    [
        ("transforms.shear", (), {}, "One and only one of"),
        ("transforms.shear", (), {"shear": (1.0, 2.0), "angles": (1.0, 2.0)}, "One and only one"),
        ("transforms.shear", (), {"shear": 0.5}, "D\\*\\(D-1\\) elements"),
        ("transforms.scale", (), {"scale": (2.0, 3.0), "center": (1.0, 2.0, 3.0)}, "'center'"),
        ("transforms.rotation", (), {"angle": 3.0, "axis": (0.0, 1.0)}, "'axis' must have 3"),
        ("transforms.rotation", (), {"angle": 3.0, "center": (1.0, 2.0, 3.0)}, "'center'"),
        (
            "transforms.translation",
            [[np.eye(2, 3, dtype=np.float32)]],
            {"offset": (1.0, 2.0, 3.0)},
            "2D transform but other arguments suggest a 3D",
        ),
        (
            "transforms.translation",
            [[np.eye(3, dtype=np.float32)]],
            {"offset": (1.0, 2.0)},
            r"dimensions \(ndim, ndim\+1\).*shape \(3, 3\)",
        ),
        (
            "transforms.crop",
            (),
            {"from_start": (1.0, 2.0, 3.0), "to_end": (2.0, 2.0)},
            "same number of dimensions",
        ),
        (
            "transforms.combine",
            [[np.eye(2, 3, dtype=np.float32)], [np.eye(3, 4, dtype=np.float32)]],
            {},
            "same shape",
        ),
    ],
)
def test_refused(name, inputs, args, message):
    with pytest.raises(OperatorError, match=message) as info:
        run(name, inputs, **args)
    assert name.split(".")[1].capitalize() in str(info.value)


def test_bad_arguments_are_named():
    with pytest.raises(ArgumentError, match="missing required argument 'angle'"):
        fn.transforms.rotation()
    with pytest.raises(ArgumentError, match=r"transforms\.Scale: argument 'ndim'"):
        fn.transforms.scale(scale=2.0, ndim=0)
    with pytest.raises(ArgumentError, match=r"transforms\.Translation: argument 'offset'"):
        fn.transforms.translation(offset="far")
    with pytest.raises(ArgumentError, match=r"transforms\.Combine: takes 2 to 99 input"):
        fn.transforms.combine(fn.transforms.scale(scale=(1.0, 2.0)))
