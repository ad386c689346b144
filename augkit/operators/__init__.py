"""Every operator of augkit: a schema in the registry plus its kernels, one module per operator
family. Importing this package registers them all; ``augkit.fn`` and ``augkit.ops`` are
generated from the result."""

from augkit.operators import external_source, random, transfer  # noqa: F401
