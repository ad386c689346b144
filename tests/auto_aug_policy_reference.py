"""DALI 2.4's automatic augmentation policies as data, stored in
``tests/dali_parity/reference/auto_aug_policies.json`` and compared with ``augkit.auto_aug``'s
by ``tests/test_auto_aug_policies.py``.

Run with DALI's venv, from the repository root::

    env -u VIRTUAL_ENV -u PYTHONPATH benchmarks/_work/dali-venv/bin/python \\
        tests/auto_aug_policy_reference.py

Stored (JSON):

- ``policies``: every predefined AutoAugment policy (``get_image_net_policy``,
  ``get_reduced_cifar10_policy``, ``get_svhn_policy``, ``get_reduced_image_net_policy``) for the
  translation settings ``SETTINGS`` (by pixels or relative to the shape; defaults, one limit,
  a (height, width) pair): the name, ``num_magnitude_bins``, every sub-policy's (augmentation
  name, probability, magnitude bin) and each augmentation's set-up.
- ``suites``: RandAugment's (``get_rand_augment_suite``, ``get_rand_augment_non_monotonic_suite``)
  and TrivialAugment's (``get_trivial_augment_wide_suite``) augmentations, in order, for the same
  settings.
- ``calls``: what the top-level functions (``auto_augment``, ``auto_augment_image_net``,
  ``rand_augment``, ``trivial_augment_wide``) hand to their ``apply_*`` function for the
  argument sets ``CALLS`` (captured by replacing it): the policy or the suite (after
  ``excluded``, ``monotonic_mag``), ``n``, ``m``, ``num_magnitude_bins``, ``seed`` and the
  keywords.
- ``errors``: the type and message of each error (and warning) case (those raised while AutoGraph
  converts the definition without AutoGraph's traceback; the ``excluded`` ones list the suite
  sorted, where DALI lists a set); ``warnings``: the warning of ``n=0``.

An augmentation's set-up: ``name``, ``op`` (the function's name), ``mag_range``,
``randomly_negate``, ``mag_to_param`` (the function's name, or null for the default),
``param_device``, and ``params``: the key (``param_key``) of its parameter table in
``params``, which holds the parameter of every magnitude bin for the suite's
``num_magnitude_bins``, computed by DALI's own ``Augmentation`` (for a randomly negated one,
``[positive, negated]`` per bin); one table per distinct set-up.
"""

from __future__ import annotations

import json
import pathlib
import warnings
from typing import Any

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
OUT = ROOT / "tests" / "dali_parity" / "reference" / "auto_aug_policies.json"

# (key, use_shape, max_translate_abs, max_translate_rel)
SETTINGS = (
    ("default", False, None, None),
    ("shape", True, None, None),
    ("abs=40", False, 40, None),
    ("abs=(30,60)", False, (30, 60), None),
    ("rel=0.3", True, None, 0.3),
    ("rel=(0.2,0.5)", True, None, (0.2, 0.5)),
)
SHAPE = "<shape>"  # stands for a DataNode of shapes (the calls only test it for None)

# (key, function, kwargs); the data argument is a placeholder.
CALLS = (
    ("auto_augment", "auto_augment", {}),
    ("auto_augment/shape", "auto_augment", {"shape": SHAPE}),
    (
        "auto_augment/svhn,abs=(10,20)",
        "auto_augment",
        {"policy_name": "svhn", "max_translate_abs": (10, 20)},
    ),
    (
        "auto_augment/reduced_cifar10,shape,rel=0.5",
        "auto_augment",
        {"policy_name": "reduced_cifar10", "shape": SHAPE, "max_translate_rel": 0.5},
    ),
    ("auto_augment/reduced_image_net", "auto_augment", {"policy_name": "reduced_image_net"}),
    (
        "auto_augment/fill=None,interp=NN,seed=7",
        "auto_augment",
        {"fill_value": None, "interp_type": "INTERP_NN", "seed": 7},
    ),
    ("auto_augment_image_net/shape", "auto_augment_image_net", {"shape": SHAPE}),
    ("rand_augment/n=2,m=9", "rand_augment", {"n": 2, "m": 9}),
    ("rand_augment/shape", "rand_augment", {"n": 1, "m": 30, "shape": SHAPE}),
    ("rand_augment/non_monotonic", "rand_augment", {"n": 3, "m": 5, "monotonic_mag": False}),
    (
        "rand_augment/excluded",
        "rand_augment",
        {"n": 2, "m": 3, "excluded": ["rotate", "translate_x", "identity"]},
    ),
    (
        "rand_augment/bins=11,abs=(5,7),seed=3",
        "rand_augment",
        {"n": 2, "m": 10, "num_magnitude_bins": 11, "max_translate_abs": (5, 7), "seed": 3},
    ),
    (
        "rand_augment/shape,rel=0.25,fill=0",
        "rand_augment",
        {"n": 2, "m": 4, "shape": SHAPE, "max_translate_rel": 0.25, "fill_value": 0},
    ),
    ("trivial_augment_wide", "trivial_augment_wide", {}),
    ("trivial_augment_wide/shape", "trivial_augment_wide", {"shape": SHAPE}),
    (
        "trivial_augment_wide/excluded,bins=5",
        "trivial_augment_wide",
        {"excluded": ["solarize", "shear_y"], "num_magnitude_bins": 5},
    ),
    (
        "trivial_augment_wide/abs=20,seed=1",
        "trivial_augment_wide",
        {"max_translate_abs": 20, "seed": 1},
    ),
)


PARAMS: dict[str, Any] = {}  # the parameter tables, by PARAM_KEY


def param_key(op: str, mag_range: Any, negate: bool, mag_to_param: Any, bins: int) -> str:
    """The key of an augmentation's parameter table: what it depends on."""
    return f"{op}|{mag_range}|{negate}|{mag_to_param}|{bins}"


def _config(aug: Any, num_bins: int) -> dict[str, Any]:
    from nvidia.dali.auto_aug.core._augmentation import _SignedMagnitudeBin

    mag_range = aug.mag_range
    out = {
        "name": aug.name,
        "op": aug.op.__name__,
        "mag_range": None if mag_range is None else [float(x) for x in mag_range],
        "randomly_negate": bool(aug.randomly_negate),
        "mag_to_param": None if aug._mag_to_param is None else aug._mag_to_param.__name__,
        "param_device": aug.param_device,
        "params": None,
    }
    if mag_range is not None:
        key = param_key(
            out["op"], out["mag_range"], out["randomly_negate"], out["mag_to_param"], num_bins
        )
        magnitudes = aug._get_magnitudes(num_bins)
        if aug.randomly_negate:
            signed = _SignedMagnitudeBin._remap_to_signed_magnitudes(magnitudes)
            params = aug._map_mags_to_params(signed)
            params = params.reshape(num_bins, 2, *params.shape[1:])
        else:
            params = aug._map_mags_to_params(magnitudes)
        PARAMS[key] = np.asarray(params, dtype=np.float64).tolist()
        out["params"] = key
    return out


def _policy(policy: Any) -> dict[str, Any]:
    return {
        "name": policy.name,
        "num_magnitude_bins": policy.num_magnitude_bins,
        "sub_policies": [
            [[aug.name, p, mag] for aug, p, mag in sub] for sub in policy.sub_policies
        ],
        "augmentations": {
            name: _config(aug, policy.num_magnitude_bins)
            for name, aug in policy.augmentations.items()
        },
    }


def _suite(augs: Any, num_bins: int) -> list[dict[str, Any]]:
    return [_config(aug, num_bins) for aug in augs]


def _plain(value: Any) -> Any:
    from nvidia.dali import types

    if isinstance(value, types.DALIInterpType):
        return str(value).split(".")[-1]
    if isinstance(value, tuple):
        return list(value)
    return value


def _message(fn: Any) -> dict[str, str]:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            fn()
    except Exception as exc:
        kind, message = type(exc).__name__, str(exc)
        if message.startswith("in user code:"):
            # AutoGraph's wrapper: a traceback of the user's code, then "    Type: message".
            kind, _, message = message.rstrip().split("\n\n")[-1].strip().partition(": ")
        if "The augmentations in the suite are: " in message:
            # DALI lists a set: the order changes from run to run; stored sorted.
            head, _, names = message.partition("The augmentations in the suite are: ")
            names = ", ".join(sorted(names.rstrip(".").split(", ")))
            message = f"{head}The augmentations in the suite are: {names}."
        return {"type": kind, "message": message}
    raise AssertionError("expected an error")


def main() -> None:
    import nvidia.dali as dali
    from nvidia.dali import fn, pipeline_def, types
    from nvidia.dali.auto_aug import augmentations as a
    from nvidia.dali.auto_aug import auto_augment as aa
    from nvidia.dali.auto_aug import rand_augment as ra
    from nvidia.dali.auto_aug import trivial_augment as ta
    from nvidia.dali.auto_aug.core import Policy

    warnings.filterwarnings("ignore", category=DeprecationWarning)
    data: dict[str, Any] = {"dali_version": dali.__version__}

    policies: dict[str, Any] = {}
    suites: dict[str, Any] = {}
    for key, use_shape, max_abs, max_rel in SETTINGS:
        kw = {"use_shape": use_shape, "max_translate_abs": max_abs, "max_translate_rel": max_rel}
        for name, get in (
            ("image_net", aa.get_image_net_policy),
            ("reduced_cifar10", aa.get_reduced_cifar10_policy),
            ("svhn", aa.get_svhn_policy),
        ):
            policies[f"{name}/{key}"] = _policy(get(**kw))
        for name, get, bins in (
            ("rand_augment", ra.get_rand_augment_suite, 31),
            ("rand_augment_non_monotonic", ra.get_rand_augment_non_monotonic_suite, 31),
            ("trivial_augment_wide", ta.get_trivial_augment_wide_suite, 31),
        ):
            suites[f"{name}/{key}"] = _suite(get(**kw), bins)
    policies["reduced_image_net"] = _policy(aa.get_reduced_image_net_policy())
    data["policies"] = policies
    data["suites"] = suites

    # What the top-level functions hand over: replace apply_* by a recorder.
    calls: dict[str, Any] = {}
    recorded: dict[str, Any] = {}

    def recorder(kind: str):
        def record(*args: Any, **kwargs: Any) -> str:
            recorded.clear()
            recorded.update(kind=kind, args=args, kwargs=kwargs)
            return "<out>"

        return record

    originals = (aa.apply_auto_augment, ra.apply_rand_augment, ta.apply_trivial_augment)
    aa.apply_auto_augment = recorder("auto")
    ra.apply_rand_augment = recorder("rand")
    ta.apply_trivial_augment = recorder("trivial")
    modules = {
        "auto_augment": aa,
        "auto_augment_image_net": aa,
        "rand_augment": ra,
        "trivial_augment_wide": ta,
    }
    try:
        for key, function, kwargs in CALLS:
            kwargs = dict(kwargs)
            if "interp_type" in kwargs:
                kwargs["interp_type"] = getattr(types, kwargs["interp_type"])
            getattr(modules[function], function)("<data>", **kwargs)
            args, extra = recorded["args"], dict(recorded["kwargs"])
            entry: dict[str, Any] = {}
            if recorded["kind"] == "auto":
                policy, _, seed = args
                entry["policy"] = _policy(policy)
                entry["seed"] = seed
            elif recorded["kind"] == "rand":
                augs, _, n, m = args
                entry.update(n=n, m=m, num_magnitude_bins=extra.pop("num_magnitude_bins"))
                entry["seed"] = extra.pop("seed")
                entry["suite"] = _suite(augs, entry["num_magnitude_bins"])
            else:
                augs, _ = args
                entry["num_magnitude_bins"] = extra.pop("num_magnitude_bins")
                entry["seed"] = extra.pop("seed")
                entry["suite"] = _suite(augs, entry["num_magnitude_bins"])
            entry["kwargs"] = {k: _plain(v) for k, v in sorted(extra.items())}
            calls[key] = entry
    finally:
        aa.apply_auto_augment, ra.apply_rand_augment, ta.apply_trivial_augment = originals
    data["calls"] = calls

    errors: dict[str, Any] = {}
    suite = ra.get_rand_augment_suite()
    errors["auto_augment/policy_name"] = _message(lambda: aa.auto_augment("<d>", "imagenet"))
    errors["auto_augment/reduced_image_net,shape"] = _message(
        lambda: aa.auto_augment("<d>", "reduced_image_net", shape=SHAPE)
    )
    errors["auto_augment/reduced_image_net,max_translate_rel"] = _message(
        lambda: aa.auto_augment("<d>", "reduced_image_net", max_translate_rel=0.5)
    )
    errors["auto_augment/shape,max_translate_abs"] = _message(
        lambda: aa.auto_augment("<d>", shape=SHAPE, max_translate_abs=10)
    )
    errors["auto_augment/max_translate_rel"] = _message(
        lambda: aa.auto_augment("<d>", max_translate_rel=0.5)
    )
    errors["get_image_net_policy/use_shape"] = _message(lambda: aa.get_image_net_policy(1))
    errors["rand_augment/excluded"] = _message(
        lambda: ra.rand_augment("<d>", 2, 3, excluded=["rotation"])
    )
    errors["trivial_augment_wide/excluded"] = _message(
        lambda: ta.trivial_augment_wide("<d>", excluded=["rotation"])
    )
    errors["apply_rand_augment/n"] = _message(lambda: ra.apply_rand_augment(suite, "<d>", -1, 3))
    errors["apply_rand_augment/num_magnitude_bins"] = _message(
        lambda: ra.apply_rand_augment(suite, "<d>", 2, 3, num_magnitude_bins=0)
    )
    errors["apply_rand_augment/m"] = _message(lambda: ra.apply_rand_augment(suite, "<d>", 2, 31))
    errors["apply_rand_augment/empty"] = _message(lambda: ra.apply_rand_augment([], "<d>", 2, 3))
    errors["apply_trivial_augment/num_magnitude_bins"] = _message(
        lambda: ta.apply_trivial_augment(suite, "<d>", num_magnitude_bins=0)
    )
    errors["apply_trivial_augment/empty"] = _message(lambda: ta.apply_trivial_augment([], "<d>"))
    errors["apply_auto_augment/empty"] = _message(
        lambda: aa.apply_auto_augment(Policy("Empty", 11, []), "<d>")
    )
    errors["Policy/num_magnitude_bins"] = _message(lambda: Policy("P", 0, []))
    errors["Policy/sub_policies"] = _message(lambda: Policy("P", 11, "rotate"))
    errors["Policy/sub_policy"] = _message(lambda: Policy("P", 11, ["rotate"]))
    errors["Policy/triple"] = _message(lambda: Policy("P", 11, [[("rotate", 0.5)]]))
    errors["Policy/augmentation"] = _message(lambda: Policy("P", 11, [[("rotate", 0.5, 3)]]))
    errors["Policy/probability"] = _message(lambda: Policy("P", 11, [[(a.rotate, 1.5, 3)]]))
    errors["Policy/magnitude_none"] = _message(lambda: Policy("P", 11, [[(a.rotate, 0.5, None)]]))
    errors["Policy/magnitude_range"] = _message(lambda: Policy("P", 11, [[(a.rotate, 0.5, 11)]]))
    errors["Policy/probability_zero"] = _message(lambda: Policy("P", 11, [[(a.rotate, 0, 3)]]))
    errors["Policy/magnitude_ignored"] = _message(lambda: Policy("P", 11, [[(a.invert, 0.5, 3)]]))

    def in_pipeline(body: Any, conditionals: bool) -> dict[str, str]:
        @pipeline_def(batch_size=2, num_threads=1, device_id=None, enable_conditionals=conditionals)
        def pipe():
            images = fn.external_source(
                source=lambda: [np.zeros((4, 4, 3), np.uint8)] * 2, batch=True, layout="HWC"
            )
            return body(images)

        return _message(lambda: pipe().build())

    errors["apply_rand_augment/unused_kwarg"] = in_pipeline(
        lambda x: ra.apply_rand_augment(suite, x, 2, 3, fill_value=0, shapes=None), True
    )
    errors["apply_rand_augment/missing_shape"] = in_pipeline(
        lambda x: ra.apply_rand_augment(ra.get_rand_augment_suite(use_shape=True), x, 2, 3), True
    )
    errors["auto_augment/no_conditionals"] = in_pipeline(lambda x: aa.auto_augment(x), False)
    errors["rand_augment/no_conditionals"] = in_pipeline(lambda x: ra.rand_augment(x, 2, 3), False)
    errors["trivial_augment_wide/no_conditionals"] = in_pipeline(
        lambda x: ta.trivial_augment_wide(x), False
    )
    data["errors"] = errors
    data["params"] = PARAMS

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ra.apply_rand_augment(suite, "<d>", 0, 3)
    data["warnings"] = {
        "apply_rand_augment/n=0": {
            "category": caught[0].category.__name__,
            "message": str(caught[0].message),
        }
    }

    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    print(f"wrote {OUT} ({OUT.stat().st_size / 1e3:.0f} kB)")


if __name__ == "__main__":
    main()
