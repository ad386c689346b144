"""DALI's ``fn.segmentation.*`` operators: random pixels and object boxes of label maps, and the
selection of COCO polygons by mask id."""
