# ruff: noqa
# fmt: off
"""DALI's documented examples of conditional execution (``enable_conditionals=True``), kept as DALI
wrote them so that augkit runs them unchanged: the fixtures of augkit's conditionals tests.

Where they come from (DALI 2.4 documentation):

- "Conditional execution in DALI", ``docs/examples/general/conditionals.ipynb`` in NVIDIA/DALI
  (https://docs.nvidia.com/deeplearning/dali/user-guide/docs/examples/general/conditionals.html):
  all its code cells, numbered here as in the notebook (``[1]`` .. ``[14]``);
- the docstring of ``nvidia.dali.pipeline.do_not_convert`` (its three examples);
  ``nvidia.dali.pipeline_def``'s docstring only names ``enable_conditionals`` (no example).

What changed from DALI's text, and nothing else:

- the imports: ``nvidia.dali`` -> ``augkit`` (``from nvidia.dali import fn`` -> ``from augkit
  import fn``, ``nvidia.dali.types`` -> ``augkit.types``, ``nvidia.dali.pipeline`` ->
  ``augkit.pipeline``); ``import numpy as np`` added for the ``do_not_convert`` examples, whose
  docstring assumes it;
- ``file_root="../data/images"`` -> ``file_root=data_dir`` (each notebook example is a function
  of the data directory, e.g. ``data/images`` of this repository, which has one sub-directory per
  label as ``fn.readers.file`` expects);
- ``fn.decoders.image(jpegs, device="mixed")`` -> ``device="cpu"``: DALI's mixed decoder needs a
  GPU, augkit runs without one (each such line says so);
- the notebook's cells are wrapped in functions (a cell that runs a pipeline becomes the function's
  return value; ``display`` is a parameter so that a test can pass a no-op).

Things of DALI's own that augkit must provide for these to run: ``augkit.tensors.TensorCPU``
(used by the notebook's ``display``), ``fn._conditional.split`` / ``fn._conditional.merge``
(the notebook's "equivalent pipeline", cell [6], calls DALI's internal operators by name) and
``augkit.pipeline.do_not_convert``.

Notes from running them with DALI 2.4 (CPU only):

- the ``do_not_convert`` docstring's examples call ``sample_info.iter_idx``, which DALI's
  ``SampleInfo`` does not have (it has ``iteration``): DALI raises ``AttributeError: 'SampleInfo'
  object has no attribute 'iter_idx'`` when their pipelines run; the first one (the factory
  defined inside the pipeline definition, ``parallel=True``) is refused before that, when the
  pipeline is defined: ``ValueError: The `source` parameter that was passed to external source was
  created in a scope that was converted with AutoGraph. ...``.
"""

# [1]
from augkit import pipeline_def
from augkit.types import DALIDataType
from augkit import fn
from augkit import tensors

# [4]
import matplotlib.pyplot as plt

def display(output):
    data_idx = 0
    fig, axes = plt.subplots(len(output) // 2, 2, figsize=(15, 15))
    if len(output) == 1:
        axes = [axes]
    for i, out in enumerate(output):
        img = out if isinstance(out, tensors.TensorCPU) else out.as_cpu()
        axes[i // 2, i % 2].imshow(img);
        axes[i // 2, i % 2].axis('off')


def simple_example(data_dir, display=display):
    """Cells [2], [3] and [5]: rotate 25% of the images (``if do_rotate:``), then resize.
    Returns the output batch."""
    # [2]
    @pipeline_def(enable_conditionals=True, batch_size=4, num_threads=4, device_id=0, seed=42)
    def rotate_pipe():
        jpegs, _ = fn.readers.file(device="cpu", file_root=data_dir)
        images = fn.decoders.image(jpegs, device="cpu")  # DALI: device="mixed" (needs a GPU)
        do_rotate = fn.random.coin_flip(probability=0.25, dtype=DALIDataType.BOOL)
        angle = fn.random.uniform(range=(10, 30))

        if do_rotate:
            result = fn.rotate(images, angle=angle, fill_value=0)
        else:
            result = images

        resized = fn.resize(result, resize_x=400, resize_y=400)
        return resized

    # [3]
    pipe = rotate_pipe()
    pipe.build()

    # [5]
    output, = pipe.run()
    display(output)
    return output


def equivalent_pipeline_example(data_dir, display=display):
    """Cells [6], [7] and [8]: the same pipeline written with DALI's internal split and merge
    operators (no ``enable_conditionals``). Returns the output batch."""
    # [6]
    @pipeline_def(batch_size=4, num_threads=4, device_id=0, seed=42)
    def manual_rotation_pipe():
        jpegs, _ = fn.readers.file(device="cpu", file_root=data_dir)
        images = fn.decoders.image(jpegs, device="cpu")  # DALI: device="mixed" (needs a GPU)
        do_rotate = fn.random.coin_flip(probability=0.25, dtype=DALIDataType.BOOL)
        angle = fn.random.uniform(range=(10, 30))

        images_true_branch, images_false_branch = fn._conditional.split(images, predicate=do_rotate)
        angle_true_branch, angle_false_branch = fn._conditional.split(angle, predicate=do_rotate)

        result_true = fn.rotate(images_true_branch, angle=angle_true_branch, fill_value=0)
        result_false = images_false_branch

        result = fn._conditional.merge(result_true, result_false, predicate=do_rotate)

        resized = fn.resize(result, resize_x=400, resize_y=400)
        return resized

    # [7]
    manual_pipe = manual_rotation_pipe()
    manual_pipe.build()

    # [8]
    output, = manual_pipe.run()
    display(output)
    return output


def helper_function_example(data_dir, display=display):
    """Cells [9], [10] and [11]: the rotation done by a helper function called in the ``if``
    branch (the helper is traced too). Returns the output batch."""
    # [9]
    def random_rotate(images):
        angle = fn.random.uniform(range=(10, 30))
        return fn.rotate(images, angle=angle, fill_value=0)


    @pipeline_def(enable_conditionals=True, batch_size=4, num_threads=4, device_id=0, seed=42)
    def rotate_with_helper_pipe():
        jpegs, _ = fn.readers.file(device="cpu", file_root=data_dir)
        images = fn.decoders.image(jpegs, device="cpu")  # DALI: device="mixed" (needs a GPU)
        do_rotate = fn.random.coin_flip(probability=0.25, dtype=DALIDataType.BOOL)

        if do_rotate:
            result = random_rotate(images)
        else:
            result = images

        resized = fn.resize(result, resize_x=400, resize_y=400)
        return resized

    # [10]
    helper_pipe = rotate_with_helper_pipe()
    helper_pipe.build()

    # [11]
    output, = helper_pipe.run()
    display(output)
    return output


def tracing_example(data_dir):
    """Cells [12], [13] and [14]: a DataNode condition traces both branches (prints "Tracing True
    branch" and "Tracing False branch"); a Python condition traces one. Returns the two
    pipelines (not built, as in the notebook)."""
    # [12]
    import random

    @pipeline_def(enable_conditionals=True, batch_size=4, num_threads=4, device_id=0, seed=42)
    def pipe_with_dali_conditional():
        jpegs, _ = fn.readers.file(device="cpu", file_root=data_dir)
        images = fn.decoders.image(jpegs, device="cpu")  # DALI: device="mixed" (needs a GPU)
        dali_random_value = fn.random.coin_flip(dtype=DALIDataType.BOOL)

        if dali_random_value:
            print("Tracing True branch")
            result = images + 10
        else:
            print("Tracing False branch")
            result = images
        return result

    @pipeline_def(enable_conditionals=True, batch_size=4, num_threads=4, device_id=0, seed=42)
    def pipe_with_python_conditional():
        jpegs, _ = fn.readers.file(device="cpu", file_root=data_dir)
        images = fn.decoders.image(jpegs, device="cpu")  # DALI: device="mixed" (needs a GPU)
        dali_random_value = fn.random.coin_flip(dtype=DALIDataType.BOOL)

        if random.choice([True, False]):
            print("Tracing True branch")
            result = images + 10
        else:
            print("Tracing False branch")
            result = images
        return result

    # [13]
    dali_conditional = pipe_with_dali_conditional()

    # [14]
    python_conditional = pipe_with_python_conditional()
    return dali_conditional, python_conditional


# The docstring of nvidia.dali.pipeline.do_not_convert. Each function returns the example's
# pipeline factory (the decorated function); the examples give no pipeline arguments.

def do_not_convert_factory_inside():
    """The first example: the ``source`` factory defined inside the definition (converted with
    it, so DALI refuses the parallel external source)."""
    import numpy as np

    from augkit import pipeline_def, fn

    @pipeline_def(enable_conditionals=True)
    def pipe():

        def source_factory(size):
            def source_fun(sample_info):
                return np.full(size, sample_info.iter_idx)
            return source_fun

        source = source_factory(size=(2, 1))
        return fn.external_source(source=source, parallel=True, batch=False)

    return pipe


def do_not_convert_factory_outside():
    """The second example ("Should be converted into"): the factory outside the definition,
    decorated with ``@do_not_convert``."""
    import numpy as np

    from augkit import pipeline_def, fn
    from augkit.pipeline import do_not_convert

    @do_not_convert
    def source_factory(size):
        def source_fun(sample_info):
            return np.full(size, sample_info.iter_idx)
        return source_fun

    @pipeline_def(enable_conditionals=True)
    def pipe():
        source = source_factory(size=(2, 1))
        return fn.external_source(source=source, parallel=True, batch=False)

    return pipe


def do_not_convert_callback_by_name():
    """The third example: a callback defined outside the definition and only passed by name is
    not converted."""
    import numpy as np

    from augkit import pipeline_def, fn

    def source_fun(sample_info):
        return np.full((2, 2), sample_info.iter_idx)

    @pipeline_def(enable_conditionals=True)
    def pipe():
        return fn.external_source(source=source_fun, batch=False)

    return pipe
