"""Box and coordinate operators (DALI's ``bb_flip``, ``coord_flip``, ``coord_transform``,
``bbox_paste``): kernels on N×4 boxes and N×D points, not on pixels."""
