"""Tensor operators (DALI's generic operators): layout and shape changes, joins, fills,
casts, one-hot encoding, shapes, and the shape of encoded images."""
