"""Every operator of augkit: a schema in the registry plus its kernels, one module per operator
(kornia-style families: ``geometric/``, ``color/``, ``readers/``, ``decoders/``). Importing this
package imports every module in it, which registers them all; ``augkit.fn``, ``augkit.ops`` and
``augkit.eager`` are generated from the result. A new operator needs its module (anywhere in
this package) and its row in ``tests/operator_cases.py``: nothing else lists operators.
"""

import importlib
import pkgutil

for _module in sorted(m.name for m in pkgutil.walk_packages(__path__, f"{__name__}.")):
    importlib.import_module(_module)
