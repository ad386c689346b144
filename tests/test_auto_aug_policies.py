"""``augkit.auto_aug``'s policies (``auto_augment``, ``rand_augment``, ``trivial_augment``),
``Policy`` and ``select`` against DALI 2.4: the policy tables, suites, what the top-level
functions hand to ``apply_*``, and the error messages stored by
``tests/auto_aug_policy_reference.py`` in ``tests/dali_parity/reference/auto_aug_policies.json``;
then the policies running in pipelines on real photos: each sample's output equals the
augmentations its draws chose, applied to it directly, and the choices have their probabilities.

How the chosen augmentations are known: ``Pipeline.draws()`` names each per-sample choice
("rand_augment[0]": "rotate", "auto_augment[1]": "skip"), and the policy's random draws (the
operation indices, magnitude bins, signs, coins) are captured as they are made (``fn.random.
uniform`` wrapped) and returned as extra pipeline outputs. augkit's random streams are not
DALI's, so the draws themselves cannot be compared with DALI's; their frequencies are checked
against the probabilities instead (5 standard deviations per cell, over a few thousand samples).
"""

from __future__ import annotations

import json
import pathlib
import warnings
from typing import Any

import numpy as np
import pytest
from PIL import Image

from augkit import ArgumentError, fn, pipeline_def, types
from augkit.auto_aug import Policy, augmentations, core, select, signed_bin
from augkit.auto_aug import auto_augment as aa
from augkit.auto_aug import rand_augment as ra
from augkit.auto_aug import trivial_augment as ta
from augkit.auto_aug.core import MissingArgException, UnusedArgException, accepted_kwargs
from tests.auto_aug_policy_reference import CALLS, SETTINGS, SHAPE, param_key

ROOT = pathlib.Path(__file__).resolve().parents[1]
REF = json.loads((ROOT / "tests/dali_parity/reference/auto_aug_policies.json").read_text())
SETTING = {
    key: {"use_shape": use_shape, "max_translate_abs": max_abs, "max_translate_rel": max_rel}
    for key, use_shape, max_abs, max_rel in SETTINGS
}
POLICY_GETTERS = {
    "image_net": aa.get_image_net_policy,
    "reduced_cifar10": aa.get_reduced_cifar10_policy,
    "svhn": aa.get_svhn_policy,
}
SUITE_GETTERS = {
    "rand_augment": ra.get_rand_augment_suite,
    "rand_augment_non_monotonic": ra.get_rand_augment_non_monotonic_suite,
    "trivial_augment_wide": ta.get_trivial_augment_wide_suite,
}
# Photos of data/images at a small non-square size (translations differ along x and y).
PHOTOS = sorted((ROOT / "data" / "images").glob("*/*.jpg"))[:8]
SIZE = (40, 56)  # (height, width)


def load_images() -> list[np.ndarray]:
    images = []
    for path in PHOTOS:
        with Image.open(path) as im:
            rgb = im.convert("RGB").resize((SIZE[1], SIZE[0]), Image.BILINEAR)
        images.append(np.ascontiguousarray(np.asarray(rgb, dtype=np.uint8)))
    return images


IMAGES = load_images()


# --- tables ---------------------------------------------------------------------------------
def config_of(aug: Any, num_bins: int) -> dict[str, Any]:
    """An augmentation's set-up and parameter table, as the reference stores DALI's."""
    mag_range = aug.mag_range
    out = {
        "name": aug.name,
        "op": aug.op.__name__,
        "mag_range": None if mag_range is None else [float(x) for x in mag_range],
        "randomly_negate": aug.randomly_negate,
        "mag_to_param": None if aug._mag_to_param is None else aug._mag_to_param.__name__,
        "param_device": aug.param_device,
        "params": None,
    }
    if mag_range is not None:
        out["params"] = param_key(
            out["op"], out["mag_range"], out["randomly_negate"], out["mag_to_param"], num_bins
        )
    return out


def check_params(aug: Any, num_bins: int, where: str) -> None:
    """``aug``'s parameter for every bin (and sign) equals DALI's."""
    if aug.mag_range is None:
        return
    want = np.array(REF["params"][config_of(aug, num_bins)["params"]], dtype=np.float64)
    magnitudes = aug._magnitudes(num_bins)
    if aug.randomly_negate:
        got = aug.param_table(core._signed(magnitudes))
        got = got.reshape(num_bins, 2, *got.shape[1:])
    else:
        got = aug.param_table(magnitudes)
    assert got.shape == want.shape, where
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=1e-6, atol=1e-6, err_msg=where)


def check_policy(policy: Policy, want: dict[str, Any], where: str) -> None:
    assert policy.name == want["name"], where
    assert policy.num_magnitude_bins == want["num_magnitude_bins"], where
    got_subs = [[[aug.name, p, mag] for aug, p, mag in sub] for sub in policy.sub_policies]
    assert got_subs == want["sub_policies"], where
    assert list(policy.augmentations) == list(want["augmentations"]), where
    for name, aug in policy.augmentations.items():
        assert config_of(aug, policy.num_magnitude_bins) == want["augmentations"][name], name
        check_params(aug, policy.num_magnitude_bins, f"{where} {name}")


def check_suite(suite: list[Any], want: list[dict[str, Any]], num_bins: int, where: str) -> None:
    assert [aug.name for aug in suite] == [w["name"] for w in want], where
    for aug, w in zip(suite, want, strict=True):
        assert config_of(aug, num_bins) == w, f"{where} {aug.name}"
        check_params(aug, num_bins, f"{where} {aug.name}")


@pytest.mark.parametrize("key", sorted(REF["policies"]))
def test_policy_tables_match_dali(key):
    """Every sub-policy's (augmentation, probability, bin), and each augmentation's magnitude
    range, sign, mapping and parameters, for each translation setting."""
    if key == "reduced_image_net":
        policy = aa.get_reduced_image_net_policy()
    else:
        name, setting = key.split("/")
        policy = POLICY_GETTERS[name](**SETTING[setting])
    check_policy(policy, REF["policies"][key], key)


@pytest.mark.parametrize("key", sorted(REF["suites"]))
def test_suites_match_dali(key):
    name, setting = key.split("/")
    check_suite(SUITE_GETTERS[name](**SETTING[setting]), REF["suites"][key], 31, key)


@pytest.mark.parametrize(("key", "function", "kwargs"), CALLS, ids=[c[0] for c in CALLS])
def test_top_level_calls_match_dali(monkeypatch, key, function, kwargs):
    """What ``auto_augment``, ``rand_augment`` and ``trivial_augment_wide`` hand to their
    ``apply_*``: the policy or suite (after ``excluded``, ``monotonic_mag``), the bins, the
    seed and the keywords, for DALI's argument sets."""
    recorded: dict[str, Any] = {}

    def recorder(kind):
        def record(*args, **kw):
            recorded.update(kind=kind, args=args, kwargs=kw)
            return "<out>"

        return record

    monkeypatch.setattr(aa, "apply_auto_augment", recorder("auto"))
    monkeypatch.setattr(ra, "apply_rand_augment", recorder("rand"))
    monkeypatch.setattr(ta, "apply_trivial_augment", recorder("trivial"))
    module = {"auto_augment": aa, "auto_augment_image_net": aa, "rand_augment": ra}.get(
        function, ta
    )
    kwargs = dict(kwargs)
    if "interp_type" in kwargs:
        kwargs["interp_type"] = getattr(types, kwargs["interp_type"])
    assert getattr(module, function)("<data>", **kwargs) == "<out>"
    want = REF["calls"][key]
    extra = dict(recorded["kwargs"])
    if recorded["kind"] == "auto":
        policy, _, seed = recorded["args"]
        check_policy(policy, want["policy"], key)
    else:
        if recorded["kind"] == "rand":
            augs, _, n, m = recorded["args"]
            assert (n, m) == (want["n"], want["m"])
        else:
            augs, _ = recorded["args"]
        bins = extra.pop("num_magnitude_bins")
        assert bins == want["num_magnitude_bins"]
        seed = extra.pop("seed")
        check_suite(augs, want["suite"], bins, key)
    assert seed == want["seed"]
    plain = {k: (v.name if isinstance(v, types.DALIInterpType) else v) for k, v in extra.items()}
    assert plain == want["kwargs"]


def test_core_exports_policy_and_select_as_dali():
    """``from augkit.auto_aug.core import Policy, select``, as DALI's core exports them."""
    assert {"Policy", "select", "signed_bin", "augmentation"} <= set(core.__all__)
    assert core.Policy is Policy and core.select is select


def test_repeated_names_are_numbered():
    """Two different augmentations with one name are renamed ``<k>__<name>`` (DALI's rule),
    so that ``augmentations`` names each once."""
    strong = augmentations.rotate.augmentation(mag_range=(0, 90))
    policy = Policy(
        "Two rotations",
        11,
        [[(augmentations.rotate, 0.5, 3), (augmentations.equalize, 0.5, None)], [(strong, 1, 2)]],
    )
    assert list(policy.augmentations) == ["0__rotate", "1__equalize", "2__rotate"]
    assert policy.augmentations["2__rotate"].mag_range == (0, 90)
    assert "'0__rotate', 0.5, 3" in repr(policy)


# --- errors ---------------------------------------------------------------------------------
def dali_message(key: str) -> str:
    return REF["errors"][key]["message"].strip()


SUITE = ra.get_rand_augment_suite()
ERROR_CASES = {
    "auto_augment/policy_name": lambda: aa.auto_augment("<d>", "imagenet"),
    "auto_augment/reduced_image_net,shape": lambda: aa.auto_augment(
        "<d>", "reduced_image_net", shape=SHAPE
    ),
    "auto_augment/reduced_image_net,max_translate_rel": lambda: aa.auto_augment(
        "<d>", "reduced_image_net", max_translate_rel=0.5
    ),
    "auto_augment/shape,max_translate_abs": lambda: aa.auto_augment(
        "<d>", shape=SHAPE, max_translate_abs=10
    ),
    "auto_augment/max_translate_rel": lambda: aa.auto_augment("<d>", max_translate_rel=0.5),
    "get_image_net_policy/use_shape": lambda: aa.get_image_net_policy(1),
    "apply_rand_augment/n": lambda: ra.apply_rand_augment(SUITE, "<d>", -1, 3),
    "apply_rand_augment/num_magnitude_bins": lambda: ra.apply_rand_augment(
        SUITE, "<d>", 2, 3, num_magnitude_bins=0
    ),
    "apply_rand_augment/m": lambda: ra.apply_rand_augment(SUITE, "<d>", 2, 31),
    "apply_rand_augment/empty": lambda: ra.apply_rand_augment([], "<d>", 2, 3),
    "apply_trivial_augment/num_magnitude_bins": lambda: ta.apply_trivial_augment(
        SUITE, "<d>", num_magnitude_bins=0
    ),
    "apply_trivial_augment/empty": lambda: ta.apply_trivial_augment([], "<d>"),
    "apply_auto_augment/empty": lambda: aa.apply_auto_augment(Policy("Empty", 11, []), "<d>"),
    "Policy/num_magnitude_bins": lambda: Policy("P", 0, []),
    "Policy/sub_policies": lambda: Policy("P", 11, "rotate"),
    "Policy/sub_policy": lambda: Policy("P", 11, ["rotate"]),
    "Policy/triple": lambda: Policy("P", 11, [[("rotate", 0.5)]]),
    "Policy/augmentation": lambda: Policy("P", 11, [[("rotate", 0.5, 3)]]),
    "Policy/probability": lambda: Policy("P", 11, [[(augmentations.rotate, 1.5, 3)]]),
    "Policy/magnitude_none": lambda: Policy("P", 11, [[(augmentations.rotate, 0.5, None)]]),
    "Policy/magnitude_range": lambda: Policy("P", 11, [[(augmentations.rotate, 0.5, 11)]]),
}


@pytest.mark.parametrize("key", sorted(ERROR_CASES))
def test_errors_match_dali(key):
    """DALI's message, as an ArgumentError (DALI raises plain Exception)."""
    with pytest.raises(ArgumentError) as info:
        ERROR_CASES[key]()
    assert str(info.value).strip() == dali_message(key)


@pytest.mark.parametrize(
    ("key", "call"),
    [
        ("rand_augment/excluded", lambda: ra.rand_augment("<d>", 2, 3, excluded=["rotation"])),
        (
            "trivial_augment_wide/excluded",
            lambda: ta.trivial_augment_wide("<d>", excluded=["rotation"]),
        ),
    ],
)
def test_unknown_excluded_name(key, call):
    """DALI's message, listing the suite (in its order; DALI lists a set), and a suggestion."""
    with pytest.raises(ArgumentError) as info:
        call()
    head, _, names = dali_message(key).partition("are: ")
    got_head, _, got_names = str(info.value).partition("are: ")
    assert got_head == head
    listed, _, hint = got_names.partition(". ")
    assert sorted(listed.split(", ")) == names.rstrip(".").split(", ")
    assert hint == "Did you mean 'rotate'?"


@pytest.mark.parametrize(
    ("key", "step"),
    [
        ("Policy/probability_zero", (augmentations.rotate, 0, 3)),
        ("Policy/magnitude_ignored", (augmentations.invert, 0.5, 3)),
    ],
)
def test_policy_warnings_match_dali(key, step):
    with pytest.warns(UserWarning) as caught:
        Policy("P", 11, [[step]])
    assert [str(w.message) for w in caught] == [dali_message(key)]


def test_n_zero_warns_and_returns_the_data():
    """``n=0``: DALI's warning, the data unchanged, no conditionals needed."""
    want = REF["warnings"]["apply_rand_augment/n=0"]["message"]

    @pipeline_def(batch_size=2, num_threads=1, device_id=None)
    def pipe():
        images = fn.external_source(source=lambda: IMAGES[:2], batch=True, layout="HWC")
        return ra.rand_augment(images, n=0, m=3)

    with pytest.warns(UserWarning) as caught:
        (out,) = pipe().run()
    assert [str(w.message) for w in caught] == [want]
    np.testing.assert_array_equal(out.at(1), IMAGES[1])


def build(body, conditionals=True, batch_size=2):
    @pipeline_def(
        batch_size=batch_size, num_threads=1, device_id=None, enable_conditionals=conditionals
    )
    def pipe():
        images = fn.external_source(source=lambda: IMAGES[:batch_size], batch=True, layout="HWC")
        return body(images)

    p = pipe()
    p.build()
    return p


@pytest.mark.parametrize(
    ("key", "body"),
    [
        ("auto_augment/no_conditionals", lambda x: aa.auto_augment(x)),
        ("rand_augment/no_conditionals", lambda x: ra.rand_augment(x, 2, 3)),
        ("trivial_augment_wide/no_conditionals", lambda x: ta.trivial_augment_wide(x)),
    ],
)
def test_policies_need_conditionals(key, body):
    """Without ``enable_conditionals=True``: DALI's TypeError text (pointing at augkit's
    decorator), naming the call."""
    with pytest.raises(ArgumentError) as info:
        build(body, conditionals=False)
    dali = dali_message(key).replace("@nvidia.dali.pipeline_def", "@augkit.pipeline_def")
    assert dali in str(info.value)
    assert str(info.value).startswith(f"`apply_{key.split('/')[0].replace('_wide', '')}`")


def test_unused_and_missing_keywords_match_dali():
    with pytest.raises(UnusedArgException) as info:
        build(lambda x: ra.apply_rand_augment(SUITE, x, 2, 3, fill_value=0, shapes=None))
    assert str(info.value) == dali_message("apply_rand_augment/unused_kwarg")
    assert info.value.unused_args == ["shapes"]
    with pytest.raises(MissingArgException) as info:
        build(lambda x: ra.apply_rand_augment(ra.get_rand_augment_suite(use_shape=True), x, 2, 3))
    assert str(info.value).strip() == dali_message("apply_rand_augment/missing_shape")
    assert info.value.missing_args == ["shape"] and info.value.augmentation.name == "translate_x"


@pytest.mark.parametrize(
    ("call", "argument"),
    [
        (lambda: ra.rand_augment("<d>", 2, 3, excluded="rotate"), "excluded"),
        (lambda: ra.rand_augment("<d>", 2, 3, max_translate_abs="far"), "max_translate_abs"),
        (lambda: ta.trivial_augment_wide("<d>", max_translate_abs=(1, 2, 3)), "max_translate_abs"),
        (lambda: aa.apply_auto_augment("image_net", "<d>"), "policy"),
        (lambda: ra.apply_rand_augment(["rotate"], "<d>", 1, 3), "augmentations"),
        (lambda: ra.apply_rand_augment(SUITE, "<d>", 2.0, 3), "n"),
        (lambda: ra.apply_rand_augment(SUITE, "<d>", 2, True), "m"),
        (lambda: ta.apply_trivial_augment(SUITE, "<d>", num_magnitude_bins=31.0), "num_mag"),
        (lambda: select([], 0), "ops"),
        (lambda: select([augmentations.invert], "0"), "selected_op_idx"),
        (lambda: select([augmentations.invert, augmentations.equalize], 2, "<d>"), "index"),
    ],
)
def test_bad_arguments_name_the_argument(call, argument):
    with pytest.raises(ArgumentError, match=argument):
        call()


def test_bad_seed_is_refused():
    with pytest.raises(ArgumentError, match="`seed`"):
        build(lambda x: ta.trivial_augment_wide(x, seed="7"))


# --- in pipelines ---------------------------------------------------------------------------
def run_policy(monkeypatch, policy, batch_size=8, seed=5, images=None, iterations=1):
    """Run ``policy(images)`` with conditionals; return, per iteration, the inputs, outputs,
    the captured draws of ``fn.random.uniform`` (in the order the policy made them) and
    ``pipe.draws()``."""
    images = IMAGES if images is None else images
    captured: list[Any] = []
    original = fn.random.uniform

    def uniform(*args, **kwargs):
        node = original(*args, **kwargs)
        captured.append(node)
        return node

    @pipeline_def(
        batch_size=batch_size, num_threads=2, device_id=None, seed=seed, enable_conditionals=True
    )
    def pipe():
        data = fn.external_source(
            source=lambda: [images[i % len(images)] for i in range(batch_size)],
            batch=True,
            layout="HWC",
        )
        monkeypatch.setattr(fn.random, "uniform", uniform)
        try:
            out = policy(data)
        finally:
            monkeypatch.setattr(fn.random, "uniform", original)
        return (data, out, *captured)

    p = pipe()
    results = []
    for _ in range(iterations):
        data, out, *draws = p.run()
        results.append(
            (
                [np.asarray(data.at(i)) for i in range(batch_size)],
                [np.asarray(out.at(i)) for i in range(batch_size)],
                [[np.asarray(d.at(i)) for i in range(batch_size)] for d in draws],
                p.draws(),
            )
        )
    return results if iterations > 1 else results[0]


def apply_directly(image, steps, num_bins, with_shape):
    """``image`` through ``steps`` ((augmentation, bin, sign) each), called one by one in a
    pipeline of its own, with the policies' keywords."""

    @pipeline_def(batch_size=1, num_threads=1, device_id=None, seed=0)
    def pipe():
        data = fn.external_source(source=lambda: [image], batch=True, layout="HWC")
        kwargs = {"fill_value": 128, "interp_type": None}
        if with_shape:
            kwargs["shape"] = fn.shapes(data)
        for aug, bin_, sign in steps:
            bin_ = int(bin_)
            if aug.randomly_negate:
                sign_node = fn.external_source(source=lambda s=sign: [np.int32(s)], batch=True)
                bin_ = signed_bin(bin_, random_sign=sign_node)
            data = aug(
                data,
                magnitude_bin=None if aug.mag_range is None else bin_,
                num_magnitude_bins=num_bins,
                **accepted_kwargs(aug, kwargs),
            )
        return data

    (out,) = pipe().run()
    return np.asarray(out.at(0))


@pytest.mark.parametrize("with_shape", [False, True], ids=["pixels", "shape"])
def test_trivial_augment_applies_the_drawn_augmentation(monkeypatch, with_shape):
    suite = ta.get_trivial_augment_wide_suite(use_shape=with_shape)

    def policy(x):
        return ta.trivial_augment_wide(x, shape=fn.shapes(x) if with_shape else None)

    inputs, outs, (bins, signs, ops), draws = run_policy(monkeypatch, policy)
    for i, (image, out) in enumerate(zip(inputs, outs, strict=True)):
        aug = suite[int(ops[i])]
        assert draws[i]["trivial_augment"] == aug.name
        want = apply_directly(image, [(aug, bins[i], signs[i])], 31, with_shape)
        np.testing.assert_array_equal(out, want, err_msg=f"sample {i}: {aug.name}")


@pytest.mark.parametrize("monotonic_mag", [True, False])
def test_rand_augment_applies_the_drawn_sequence(monkeypatch, monotonic_mag):
    n, m = 3, 17
    get = ra.get_rand_augment_suite if monotonic_mag else ra.get_rand_augment_non_monotonic_suite
    suite = [aug for aug in get(use_shape=True) if aug.name != "identity"]

    def policy(x):
        return ra.rand_augment(
            x, n, m, shape=fn.shapes(x), monotonic_mag=monotonic_mag, excluded=["identity"]
        )

    inputs, outs, (ops, signs), draws = run_policy(monkeypatch, policy)
    for i, (image, out) in enumerate(zip(inputs, outs, strict=True)):
        augs = [suite[int(k)] for k in ops[i]]
        assert [draws[i][f"rand_augment[{k}]"] for k in range(n)] == [a.name for a in augs]
        steps = [(aug, m, sign) for aug, sign in zip(augs, signs[i], strict=True)]
        want = apply_directly(image, steps, 31, True)
        np.testing.assert_array_equal(out, want, err_msg=f"sample {i}: {augs}")


def test_rand_augment_with_one_operation(monkeypatch):
    """``n=1``: a scalar draw per sample (DALI's shape ``()``)."""
    suite = ra.get_rand_augment_suite()
    inputs, outs, (ops, signs), draws = run_policy(
        monkeypatch, lambda x: ra.rand_augment(x, 1, 30, num_magnitude_bins=31)
    )
    assert ops[0].shape == () and signs[0].shape == ()
    for i, (image, out) in enumerate(zip(inputs, outs, strict=True)):
        aug = suite[int(ops[i])]
        assert draws[i]["rand_augment[0]"] == aug.name
        np.testing.assert_array_equal(out, apply_directly(image, [(aug, 30, signs[i])], 31, False))


@pytest.mark.parametrize("policy_name", ["image_net", "reduced_image_net", "svhn"])
def test_auto_augment_applies_the_drawn_sub_policy(monkeypatch, policy_name):
    with_shape = policy_name == "svhn"
    if policy_name == "reduced_image_net":
        policy = aa.get_reduced_image_net_policy()
    else:
        policy = POLICY_GETTERS[policy_name](use_shape=with_shape)

    def call(x):
        shape = fn.shapes(x) if with_shape else None
        return aa.auto_augment(x, policy_name, shape=shape)

    runs = run_policy(monkeypatch, call, batch_size=16, iterations=2)
    for inputs, outs, (coins, sub_ids, signs), draws in runs:
        for i, (image, out) in enumerate(zip(inputs, outs, strict=True)):
            sub = policy.sub_policies[int(sub_ids[i])]
            steps, names = [], []
            for stage in range(2):
                runs_here = stage < len(sub) and coins[i][stage] < np.float32(sub[stage][1])
                if runs_here:
                    aug, _, mag = sub[stage]
                    steps.append((aug, 0 if mag is None else mag, signs[i][stage]))
                names.append(sub[stage][0].name if runs_here else "skip")
            assert [draws[i][f"auto_augment[{k}]"] for k in range(2)] == names
            want = apply_directly(image, steps, 11, with_shape)
            np.testing.assert_array_equal(out, want, err_msg=f"sample {i}: {names}")


def test_custom_policy_with_apply_auto_augment(monkeypatch):
    """A user's Policy: three stages, a short sub-policy (its missing stage is skipped), two
    rotations with different ranges (renamed), a keyword for the geometric ones only."""
    strong = augmentations.rotate.augmentation(mag_range=(0, 90))
    a = augmentations
    policy = Policy(
        "Mine",
        5,
        [
            [(a.rotate, 1.0, 4), (a.invert, 1.0, None)],
            [(strong, 1.0, 4), (a.posterize, 1.0, 1), (a.equalize, 1, None)],
        ],
    )
    inputs, outs, (_, sub_ids, signs), draws = run_policy(
        monkeypatch, lambda x: aa.apply_auto_augment(policy, x, fill_value=0), batch_size=8
    )
    for i, (image, out) in enumerate(zip(inputs, outs, strict=True)):
        sub = policy.sub_policies[int(sub_ids[i])]
        names = [aug.name for aug, _, _ in sub] + ["skip"] * (3 - len(sub))
        assert [draws[i][f"auto_augment[{k}]"] for k in range(3)] == names

        @pipeline_def(batch_size=1, num_threads=1, device_id=None)
        def direct(image=image, sub=sub, i=i):
            data = fn.external_source(source=lambda: [image], batch=True, layout="HWC")
            for stage, (aug, _, mag) in enumerate(sub):
                sign = fn.external_source(source=lambda s=signs[i][stage]: [s], batch=True)
                kwargs = {"fill_value": 0} if aug.op is augmentations.rotate.op else {}
                data = aug(
                    data,
                    magnitude_bin=None if mag is None else signed_bin(mag, random_sign=sign),
                    num_magnitude_bins=5,
                    **kwargs,
                )
            return data

        (want,) = direct().run()
        np.testing.assert_array_equal(out, np.asarray(want.at(0)), err_msg=f"sample {i}")


# --- frequencies ----------------------------------------------------------------------------
TINY = [np.ascontiguousarray(image[:8, :8]) for image in IMAGES]


def check_frequencies(counts: dict[Any, int], expected: dict[Any, float], total: int, what: str):
    """Each count within 5 standard deviations (+1) of ``total * p``; nothing unexpected."""
    assert set(counts) <= set(expected), f"{what}: {set(counts) - set(expected)}"
    for key, p in expected.items():
        got, mean = counts.get(key, 0), total * p
        bound = 5 * np.sqrt(total * p * (1 - p)) + 1
        assert abs(got - mean) <= bound, f"{what} {key}: {got} vs {mean:.0f} +- {bound:.0f}"


def tally(records: list[dict[str, Any]], label: str) -> dict[Any, int]:
    counts: dict[Any, int] = {}
    for record in records:
        counts[record[label]] = counts.get(record[label], 0) + 1
    return counts


def test_trivial_augment_frequencies(monkeypatch):
    """Every augmentation 1/14, every bin 1/31, each sign 1/2, over 2048 samples."""
    runs = run_policy(
        monkeypatch, ta.trivial_augment_wide, batch_size=256, images=TINY, iterations=8
    )
    records = [r for *_, draws in runs for r in draws]
    names = [aug.name for aug in ta.get_trivial_augment_wide_suite()]
    total = len(records)
    check_frequencies(tally(records, "trivial_augment"), dict.fromkeys(names, 1 / 14), total, "op")
    bins = np.concatenate([np.stack(run[2][0]) for run in runs])
    signs = np.concatenate([np.stack(run[2][1]) for run in runs])
    check_frequencies(
        dict(zip(*np.unique(bins, return_counts=True), strict=True)),
        dict.fromkeys(range(31), 1 / 31),
        total,
        "bin",
    )
    check_frequencies(
        dict(zip(*np.unique(signs, return_counts=True), strict=True)), {0: 0.5, 1: 0.5}, total, "s"
    )


def test_rand_augment_frequencies(monkeypatch):
    """Each of the n steps picks each augmentation with probability 1/13 (one excluded)."""
    runs = run_policy(
        monkeypatch,
        lambda x: ra.rand_augment(x, 2, 9, excluded=["solarize"]),
        batch_size=256,
        images=TINY,
        iterations=8,
    )
    records = [r for *_, draws in runs for r in draws]
    names = [aug.name for aug in ra.get_rand_augment_suite() if aug.name != "solarize"]
    for step in range(2):
        label = f"rand_augment[{step}]"
        check_frequencies(tally(records, label), dict.fromkeys(names, 1 / 13), len(records), label)


@pytest.mark.parametrize("policy_name", ["image_net", "reduced_cifar10"])
def test_auto_augment_frequencies(monkeypatch, policy_name):
    """Per stage, each augmentation runs with probability sum(p of its steps) / 25, and
    "skip" takes the rest."""
    runs = run_policy(
        monkeypatch,
        lambda x: aa.auto_augment(x, policy_name),
        batch_size=256,
        images=TINY,
        iterations=8,
    )
    records = [r for *_, draws in runs for r in draws]
    policy = POLICY_GETTERS[policy_name]()
    subs = policy.sub_policies
    for stage in range(2):
        expected: dict[str, float] = {"skip": 1.0}
        for sub in subs:
            if stage < len(sub):
                aug, p, _ = sub[stage]
                expected[aug.name] = expected.get(aug.name, 0.0) + p / len(subs)
                expected["skip"] -= p / len(subs)
        label = f"auto_augment[{stage}]"
        check_frequencies(tally(records, label), expected, len(records), label)
    sub_ids = np.concatenate([np.stack(run[2][1]) for run in runs])
    check_frequencies(
        dict(zip(*np.unique(sub_ids, return_counts=True), strict=True)),
        dict.fromkeys(range(25), 1 / 25),
        len(records),
        "sub-policy",
    )


# --- seeds ----------------------------------------------------------------------------------
def test_seed_fixes_the_choices(monkeypatch):
    """The same ``seed``: the same choices under different pipeline seeds; another seed:
    others. The draws get seeds of their own: the sign is not a function of the operation
    (DALI gives both the one seed, so one random stream)."""

    def choices(policy_seed, pipeline_seed):
        *_, (ops, signs), draws = run_policy(
            monkeypatch,
            lambda x: ra.rand_augment(x, 1, 5, seed=policy_seed),
            batch_size=512,
            images=TINY,
            seed=pipeline_seed,
        )
        return [d["rand_augment[0]"] for d in draws], np.stack(ops), np.stack(signs)

    a, ops, signs = choices(11, 1)
    b, _, _ = choices(11, 2)
    c, _, _ = choices(12, 1)
    assert a == b
    assert sum(x != y for x, y in zip(a, c, strict=True)) > 400
    agreement = np.mean(signs == (ops >= 7))
    assert 0.4 < agreement < 0.6


# --- select -------------------------------------------------------------------------------
def test_select_splits_keywords_and_signed_bins():
    """``select`` as DALI's: ``ops[idx](*args, **kwargs)`` per sample, with the DataNodes among
    the arguments (a ``signed_bin`` too) split; each augmentation takes only the keywords its
    op accepts."""
    ops = [augmentations.rotate, augmentations.equalize, augmentations.brightness]
    idx = [0, 1, 2, 0, 2, 1, 0, 2]
    bins = [3, 10, 7, 10, 0, 4, 9, 10]
    signs = [1, 0, 0, 0, 1, 1, 0, 1]

    @pipeline_def(batch_size=8, num_threads=1, device_id=None, enable_conditionals=True)
    def pipe():
        data = fn.external_source(source=lambda: IMAGES, batch=True, layout="HWC")
        index = fn.external_source(source=lambda: [np.int32(k) for k in idx], batch=True)
        b = fn.external_source(source=lambda: [np.int32(k) for k in bins], batch=True)
        s = fn.external_source(source=lambda: [np.int32(k) for k in signs], batch=True)
        return select(
            ops,
            index,
            data,
            magnitude_bin=signed_bin(b, random_sign=s),
            num_magnitude_bins=11,
            fill_value=0,
        )

    p = pipe()
    (out,) = p.run()
    for i in range(8):
        aug = ops[idx[i]]
        assert p.draws()[i]["select"] == aug.name
        want = apply_directly_kw(IMAGES[i], aug, bins[i], signs[i], {"fill_value": 0})
        np.testing.assert_array_equal(np.asarray(out.at(i)), want, err_msg=f"sample {i}")


def apply_directly_kw(image, aug, bin_, sign, kwargs):
    @pipeline_def(batch_size=1, num_threads=1, device_id=None)
    def pipe():
        data = fn.external_source(source=lambda: [image], batch=True, layout="HWC")
        s = fn.external_source(source=lambda: [np.int32(sign)], batch=True)
        return aug(
            data,
            magnitude_bin=signed_bin(bin_, random_sign=s),
            num_magnitude_bins=11,
            **accepted_kwargs(aug, kwargs),
        )

    (out,) = pipe().run()
    return np.asarray(out.at(0))


def test_select_without_a_per_sample_choice_needs_no_conditionals():
    """An int index, or a single op: called directly (DALI's recursion makes no ``if``)."""

    @pipeline_def(batch_size=2, num_threads=1, device_id=None)
    def pipe():
        data = fn.external_source(source=lambda: IMAGES[:2], batch=True, layout="HWC")
        index = fn.random.uniform(values=[0], dtype=types.INT32)
        return (
            select([augmentations.identity, augmentations.invert], 1, data),
            select([augmentations.invert], index, data),
        )

    first, second = pipe().run()
    np.testing.assert_array_equal(first.at(0), 255 - IMAGES[0])
    np.testing.assert_array_equal(second.at(1), 255 - IMAGES[1])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ArgumentError, match="enable_conditionals=True"):
            build(
                lambda x: select(
                    [augmentations.identity, augmentations.invert],
                    fn.random.uniform(values=[0, 1], dtype=types.INT32),
                    x,
                ),
                conditionals=False,
            )


def test_debug_mode_gives_the_same_images():
    """Debug mode (each operator run as it is defined) gives the normal pipeline's outputs."""

    def outputs(debug):
        @pipeline_def(
            batch_size=8,
            num_threads=1,
            device_id=None,
            seed=4,
            enable_conditionals=True,
            debug=debug,
        )
        def pipe():
            images = fn.external_source(source=lambda: IMAGES, batch=True, layout="HWC")
            return (
                aa.auto_augment(images, shape=fn.shapes(images)),
                ra.rand_augment(images, 2, 9),
                ta.trivial_augment_wide(images, seed=3),
            )

        p = pipe()
        return [np.asarray(o.at(i)) for _ in range(2) for o in p.run() for i in range(8)]

    for normal, debug in zip(outputs(False), outputs(True), strict=True):
        np.testing.assert_array_equal(normal, debug)


def test_no_sign_is_drawn_without_negated_augmentations(monkeypatch):
    """Signs are drawn only where an augmentation of the suite is negated at random (DALI's
    ``use_signed_magnitudes``): here the draws are the bin and the operation alone."""
    suite = [augmentations.posterize, augmentations.solarize, augmentations.invert]
    inputs, outs, draws, labels = run_policy(
        monkeypatch, lambda x: ta.apply_trivial_augment(suite, x, num_magnitude_bins=5)
    )
    assert len(draws) == 2
    bins, ops = draws
    for i, (image, out) in enumerate(zip(inputs, outs, strict=True)):
        aug = suite[int(ops[i])]
        assert labels[i]["trivial_augment"] == aug.name
        np.testing.assert_array_equal(out, apply_directly(image, [(aug, bins[i], 0)], 5, False))
