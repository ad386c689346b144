"""Filters: Gaussian blur, Laplacian, a user's 2-D filter, median blur, dilation and erosion."""
