"""Random operators (DALI's ``fn.random.*``): per-sample values that other operators take as
argument inputs, e.g. ``fn.rotate(x, angle=fn.random.uniform(range=(-30, 30)))``. One module per
operator (``uniform``, ``coin_flip``, ``normal``, ``beta``, ``choice``); ``draws`` holds what
they share: the ``Draws`` base class (a whole batch drawn at once, or sample by sample) and the
``shape`` argument.

They are the only kernels that see randomness: each draws a whole batch at once from the
counter-based streams of its samples (``augkit.random.SampleStreams``, keyed by operator seed,
shard, iteration and sample), a microsecond or two per sample, so that a sample draws the same
whatever the thread count, the mode (normal, debug, eager) or the other samples of the batch.
"""
