"""The table of operator cases (tests/operator_cases.py) covers the registry: a new operator is
under the registry-wide tests (debug == normal == eager, fuzzing, bad arguments) once it has a
row, and this test fails until it has one."""

from __future__ import annotations

from tests.operator_cases import CASES, PUBLIC


def test_every_registered_operator_has_a_row_and_every_row_an_operator() -> None:
    missing = [name for name in PUBLIC if name not in CASES]
    stale = sorted(set(CASES) - set(PUBLIC))
    assert not missing and not stale, (
        f"tests/operator_cases.py's CASES: operators without a row: {missing} (give each one: "
        f"see the module's docstring); rows of operators that are not registered: {stale}"
    )


def test_an_output_unlike_its_declaration_is_caught() -> None:
    """``check_output_specs`` (run by check_operator and the registry-wide parity test) fails
    for a kernel that returns other than its schema declares: here 2-D samples declared 3-D
    images with layout HWC."""
    import numpy as np
    import pytest

    from augkit import Pipeline, fn, kinds
    from augkit.graph import operator_class
    from augkit.operators.base import SampleOperator
    from augkit.operators.registry import OperatorSchema, OutputSpec, fixed_kinds
    from tests.operator_check import check_output_specs

    class Flatten(SampleOperator):
        def cpu(self, sample, **_):
            return sample.reshape(sample.shape[0], -1)

    schema = OperatorSchema(
        name="_test_flatten",
        class_name="_TestFlatten",
        impl=Flatten,
        doc="Declares HWC images, returns 2-D samples.",
        role="internal",
        output_kinds=fixed_kinds(OutputSpec(kind=kinds.IMAGE, ndim=3, layout="HWC")),
    )
    pipe = Pipeline(batch_size=2, num_threads=1, device_id=None)
    with pipe:
        x = fn.external_source(source=lambda: [np.zeros((2, 3, 3), np.uint8)] * 2)
        pipe.set_outputs(operator_class(schema)()(x))
    pipe.run()
    with pytest.raises(AssertionError, match="layout '', declared 'HWC'"):
        check_output_specs(pipe)
