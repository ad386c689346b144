"""augkit's operators against NVIDIA DALI 2.4's own outputs on fixed inputs.

How it fits together (``docs/dali_parity.md`` has the table of closeness it produces):

- ``cases_<family>.py``: the parity cases of one family of operators (``ParityCase`` rows, see
  ``base.py``). A case's ``body(fn, types, x)`` calls operators by DALI's names, so the same
  body builds a DALI pipeline (``nvidia.dali.fn``) and an augkit one (``augkit.fn``).
  These modules import NumPy only: they are loaded by the DALI venv's Python too.
- ``reference/inputs.npz``: the fixed inputs (small photos of ``data/images``, made once by
  ``python -m tests.dali_parity.make_inputs``), and ``reference/<family>.npz``: DALI's outputs
  for that family's cases, written by ``generate.py`` run with the DALI venv's Python
  (``make dali-reference``). Both are committed, so the comparison runs on every ``make test``.
- ``tests/test_dali_parity.py``: augkit's outputs against the stored DALI outputs, within each
  case's tolerances; where the DALI venv exists (``benchmarks/_work/dali-venv``, made by
  ``make bench`` or ``make dali-venv``), a test marked ``dali`` runs DALI again and checks that
  the stored references are still what DALI gives.
- ``report.py`` writes ``docs/dali_parity.md`` (``make dali-parity``).
"""
