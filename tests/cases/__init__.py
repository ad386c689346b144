"""The rows of ``tests/operator_cases.py``'s table, one module per family of operators: each
module defines ``CASES: dict[str, OperatorCase]``, merged into ``operator_cases.CASES``. Import
``OperatorCase`` and ``_uniform`` from ``tests.cases._row``, never from
``tests.operator_cases`` (which imports these modules)."""
