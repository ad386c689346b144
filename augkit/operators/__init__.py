"""Every operator of augkit: a schema in the registry plus its kernels, one module per operator
(kornia-style families: ``geometric/``, ``color/``, ``readers/``, ``decoders/``). Importing this
package registers them all; ``augkit.fn`` and ``augkit.ops`` are generated from the result, so a
new operator only needs its module and a line here."""

from augkit.operators import (  # noqa: F401
    arithmetic,
    crop_mirror_normalize,
    external_source,
    python_function,
    random,
    transfer,
)
from augkit.operators.color import brightness_contrast, cast  # noqa: F401
from augkit.operators.decoders import image  # noqa: F401
from augkit.operators.geometric import crop, flip, resize, rotate  # noqa: F401
from augkit.operators.readers import file  # noqa: F401
