"""Side-by-side throughput benchmarks of augkit against NVIDIA DALI (CPU), plain Python and a
torch DataLoader.

Run from the repository root with ``make bench`` (``python -m benchmarks``); see
``benchmarks/README.md`` for what is measured and how to read the table.
"""
