"""binder/ holds what mybinder.org needs to run notebooks/ in JupyterLab; these checks keep it in
step with the notebooks, pyproject.toml and the venv the tests run in (a Binder build is the
only place a mistake there would show, minutes into a build nobody is watching)."""

from __future__ import annotations

import ast
import importlib.metadata
import json
import os
import pathlib
import re
import shutil
import stat
import subprocess
import sys
import tomllib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
BINDER = ROOT / "binder"
REQUIREMENT = re.compile(r"^(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)==(?P<version>[A-Za-z0-9.+!-]+)$")
# Options a requirements file may carry here: extra places to find wheels, nothing else.
INDEX_OPTIONS = ("--extra-index-url ", "--index-url ")
# Modules a notebook may import that Binder does not install, and why.
NOT_ON_BINDER = {"cupy": "GPU examples only: mybinder.org has no GPU"}


def _normalize(name: str) -> str:
    """A distribution name as pip compares them (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def _requirement_name(spec: str) -> str:
    return _normalize(re.split(r"[\s\[<>=!~;]", spec, maxsplit=1)[0])


def _pins() -> dict[str, str]:
    """``{normalized name: version}`` of binder/requirements.txt; fails on anything but ``==``."""
    pins: dict[str, str] = {}
    for number, raw in enumerate((BINDER / "requirements.txt").read_text().splitlines(), 1):
        line = raw.split(" #", 1)[0].strip()
        if not line or line.startswith("#") or line.startswith(INDEX_OPTIONS):
            continue
        match = REQUIREMENT.match(line)
        assert match, f"binder/requirements.txt:{number}: {raw!r} is not `name==version`"
        name = _normalize(match["name"])
        assert name not in pins, f"binder/requirements.txt:{number}: {name} is pinned twice"
        pins[name] = match["version"]
    return pins


def _pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def _notebook_imports(path: pathlib.Path) -> set[str]:
    """Top-level module names the code cells of one notebook import (IPython syntax such as
    ``%matplotlib inline`` is turned into Python first, as the kernel does)."""
    from IPython.core.inputtransformer2 import TransformerManager

    transformer = TransformerManager()
    modules: set[str] = set()
    for index, cell in enumerate(json.loads(path.read_text())["cells"]):
        if cell["cell_type"] != "code":
            continue
        source = "".join(cell["source"])
        try:
            tree = ast.parse(transformer.transform_cell(source))
        except SyntaxError as error:
            pytest.fail(f"{path.name} cell {index}: not Python: {error}")
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                modules.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                modules.add(node.module.split(".")[0])
    return modules


def test_every_pin_is_exact_and_is_what_the_tests_ran_with():
    pins = _pins()
    assert pins, "binder/requirements.txt pins nothing"
    for name, version in pins.items():
        try:
            installed = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            pytest.fail(f"binder/requirements.txt pins {name}, which this venv does not have")
        # a local build (2.14.1+cu130) is the same release as its PyPI version (2.14.1)
        assert installed.split("+")[0] == version.split("+")[0], (
            f"binder/requirements.txt pins {name}=={version}; the venv has {installed}: "
            f"update the pin (see `.venv/bin/pip freeze`)"
        )


def test_augkit_dependencies_and_the_notebook_front_end_are_pinned():
    pins = _pins()
    project = _pyproject()["project"]
    required = {_requirement_name(spec) for spec in project["dependencies"]}
    front_end = {"jupyterlab", "ipykernel", "ipywidgets", "jupyterlab-widgets", "matplotlib"}
    missing = sorted((required | front_end) - set(pins))
    assert not missing, f"not pinned in binder/requirements.txt: {missing}"
    # torch and torchvision at the versions pyproject.toml pins for `make` (the `torch` extra)
    for spec in project["optional-dependencies"]["torch"]:
        name, version = spec.split("==")
        assert pins.get(_normalize(name)) == version, f"binder pins {name} unlike pyproject: {spec}"


def test_every_package_the_notebooks_import_is_pinned():
    notebooks = sorted((ROOT / "notebooks").glob("*.ipynb"))
    assert notebooks, "no notebooks under notebooks/"
    pins = _pins()
    distributions = importlib.metadata.packages_distributions()
    problems = []
    for path in notebooks:
        for module in sorted(_notebook_imports(path)):
            if module == "augkit" or module in sys.stdlib_module_names or module in NOT_ON_BINDER:
                continue
            owners = {_normalize(d) for d in distributions.get(module, [])}
            if not owners:
                problems.append(f"{path.name} imports {module}, which no installed package has")
            elif not owners & set(pins):
                problems.append(f"{path.name} imports {module} ({', '.join(sorted(owners))})")
    assert not problems, "not pinned in binder/requirements.txt:\n" + "\n".join(problems)


def test_runtime_names_a_python_augkit_supports():
    runtime = (BINDER / "runtime.txt").read_text().strip()
    match = re.fullmatch(r"python-3\.(\d+)", runtime)
    assert match, f"binder/runtime.txt should read python-3.X, not {runtime!r}"
    minimum = re.fullmatch(r">=3\.(\d+)", _pyproject()["project"]["requires-python"])
    assert minimum and int(match[1]) >= int(minimum[1])


def test_post_build_is_an_executable_script_that_stops_on_errors_and_installs_augkit():
    post_build = BINDER / "postBuild"
    lines = post_build.read_text().splitlines()
    assert lines[0].startswith("#!"), "binder/postBuild must start with a shebang"
    assert any(re.match(r"set -[a-z]*e", line) for line in lines), "postBuild lacks `set -e`"
    assert any(re.search(r"pip install .*-e '?\.", line) for line in lines), (
        "postBuild does not install augkit from the checkout (pip install -e .)"
    )
    executable = post_build.stat().st_mode & stat.S_IXUSR and os.access(post_build, os.X_OK)
    assert executable, "binder/postBuild is not executable: chmod +x binder/postBuild"
    # GitHub (and so mybinder) gets the mode git recorded, not this checkout's
    git = shutil.which("git")
    if git is None or not (ROOT / ".git").exists():
        return
    listed = subprocess.run(
        [git, "ls-files", "--stage", "binder/postBuild"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    ).stdout
    if listed:  # not yet added: nothing recorded to check
        assert listed.startswith("100755"), f"git records postBuild without +x: {listed.strip()}"


def test_readme_badge_opens_jupyterlab_on_the_notebooks():
    readme = (ROOT / "README.md").read_text()
    badge = re.search(r"https://mybinder\.org/v2/gh/[\w.-]+/[\w.-]+/HEAD\?urlpath=\S+", readme)
    assert badge, "README.md has no mybinder.org link"
    assert badge[0].rstrip(")").endswith("urlpath=lab/tree/notebooks")
