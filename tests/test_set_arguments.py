"""``Pipeline.set_arguments``: a built-in operator's constant arguments changed after build (the
viewer's controls for built-in operators), then ``rerun([name])`` or the next ``run()``."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from augkit import ArgumentError, GraphError, fn, pipeline_def

IMAGES = [np.random.default_rng(k).integers(0, 256, (20, 30, 3), dtype=np.uint8) for k in range(3)]


def _pipe(**settings: Any) -> Any:
    @pipeline_def(batch_size=3, num_threads=2, device_id=None, seed=1, **settings)
    def define() -> Any:
        x = fn.external_source(source=lambda: IMAGES, layout="HWC", name="src")
        y = fn.brightness_contrast(x, brightness=1.5, name="bc")
        angle = fn.random.uniform(range=(-30.0, 30.0), name="angle")
        return y, fn.rotate(y, angle=angle, fill_value=0, name="rot"), angle

    return define()


def test_rerun_recomputes_with_the_new_value_and_the_same_draws() -> None:
    pipe = _pipe(exec_async=False, exec_pipelined=False)
    _, rotated, angles = pipe.run()
    pipe.set_arguments("bc", brightness=1.0)
    bright, rotated_again, angles_again = pipe.rerun(["bc"])
    assert all(np.array_equal(bright.at(i), IMAGES[i]) for i in range(3))
    assert np.array_equal(angles.as_array(), angles_again.as_array())
    # the rotation of the new images by the same angles: what a fresh pipeline gives
    fresh = _pipe(exec_async=False, exec_pipelined=False)
    fresh.set_arguments("bc", brightness=1.0)
    _, want, _ = fresh.run()
    for i in range(3):
        assert np.array_equal(rotated_again.at(i), want.at(i))
        assert not np.array_equal(rotated_again.at(i), rotated.at(i))


def test_a_prefetching_pipeline_uses_the_new_value_from_the_next_run() -> None:
    pipe = _pipe()
    pipe.run()
    pipe.set_arguments("bc", brightness=1.0)
    bright, _, _ = pipe.run()
    assert all(np.array_equal(bright.at(i), IMAGES[i]) for i in range(3))
    pipe.close()


def test_a_refused_value_names_the_argument_and_changes_nothing() -> None:
    pipe = _pipe(exec_async=False, exec_pipelined=False)
    before, _, _ = pipe.run()
    with pytest.raises(ArgumentError, match=r"BrightnessContrast: argument 'brightness'"):
        pipe.set_arguments("bc", brightness="bright")
    with pytest.raises(ArgumentError, match=r"unknown argument 'brigtness'.*brightness"):
        pipe.set_arguments("bc", brigtness=2.0)
    with pytest.raises(ArgumentError, match=r"'angle' takes per-sample values from angle"):
        pipe.set_arguments("rot", angle=10.0)
    again, _, _ = pipe.rerun(["bc"])
    assert np.array_equal(again.as_array(), before.as_array())


def test_operators_whose_arguments_cannot_change_are_named() -> None:
    pipe = _pipe(exec_async=False, exec_pipelined=False)
    pipe.run()
    with pytest.raises(GraphError, match="no operator named 'blur'"):
        pipe.set_arguments("blur", sigma=1.0)
    with pytest.raises(GraphError, match="src is an operator whose arguments are fixed"):
        pipe.set_arguments("src", layout="CHW")
    debug = _pipe(debug=True)
    debug.run()
    with pytest.raises(GraphError, match=r"set_arguments\(\) needs a normal pipeline"):
        debug.set_arguments("bc", brightness=1.0)
