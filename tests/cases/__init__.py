"""The rows of ``tests/operator_cases.py``'s table, one module per family of operators: each
module defines ``CASES: dict[str, OperatorCase]`` (import ``OperatorCase`` and the helpers from
``tests.operator_cases``), merged into ``operator_cases.CASES``."""
