"""requirements.lock pins every package `make venv` installs; binder/ holds what mybinder.org
needs to run notebooks/ in JupyterLab. These checks keep the venv the tests run in equal to the
lock (so a new release on PyPI changes nothing here until `make lock` takes it), and binder/ in
step with the lock, the notebooks and pyproject.toml (a Binder build is the only place a mistake
there would show, minutes into a build nobody is watching)."""

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
LOCK = ROOT / "requirements.lock"
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


def _read_pins(path: pathlib.Path, options: tuple[str, ...] = ()) -> dict[str, str]:
    """``{normalized name: version}`` of a requirements file; fails on anything but ``==`` (and
    the given options)."""
    pins: dict[str, str] = {}
    where = path.relative_to(ROOT)
    for number, raw in enumerate(path.read_text().splitlines(), 1):
        line = raw.split(" #", 1)[0].strip()
        if not line or line.startswith("#") or (options and line.startswith(options)):
            continue
        match = REQUIREMENT.match(line)
        assert match, f"{where}:{number}: {raw!r} is not `name==version`"
        name = _normalize(match["name"])
        assert name not in pins, f"{where}:{number}: {name} is pinned twice"
        pins[name] = match["version"]
    return pins


def _pins() -> dict[str, str]:
    """``{normalized name: version}`` of binder/requirements.txt."""
    return _read_pins(BINDER / "requirements.txt", INDEX_OPTIONS)


def _lock() -> dict[str, str]:
    """``{normalized name: version}`` of requirements.lock (`uv pip compile`'s output)."""
    return _read_pins(LOCK)


def _installed() -> dict[str, set[str]]:
    """``{normalized name: versions}`` of the distributions installed in this Python's
    site-packages, augkit aside. Only there: an imported Ray puts the packages it vendors
    (``ray/thirdparty_files``: colorama...) on ``sys.path``, and they were not installed."""
    installed: dict[str, set[str]] = {}
    site = [p for p in sys.path if p.endswith("site-packages")]
    for distribution in importlib.metadata.distributions(path=site):
        name = _normalize(distribution.metadata["Name"])
        if name != "augkit":
            installed.setdefault(name, set()).add(distribution.version)
    return installed


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


def test_the_lock_pins_the_installers_and_what_pyproject_pins():
    lock = _lock()
    # make venv bootstraps uv at the lock's version; make lint runs the lock's ruff
    for tool in ("uv", "pip", "ruff", "setuptools"):
        assert tool in lock, f"requirements.lock does not pin {tool}: `make lock`"
    extras = _pyproject()["project"]["optional-dependencies"]
    for spec in extras["torch"] + extras["ray"]:
        name, version = re.sub(r"\[.*\]", "", spec).split("==")
        assert lock.get(_normalize(name)) == version, (
            f"the lock pins {name} unlike pyproject: {spec}"
        )


def test_the_venv_holds_exactly_the_lock():
    """What `make venv` installed is the lock, all of it and nothing else: a new release of any
    package reaches the tests only through `make lock`."""
    lock = _lock()
    installed = _installed()
    problems = [
        f"{name}: installed {', '.join(sorted(versions))}, the lock has "
        + (f"=={lock[name]}" if name in lock else "nothing")
        for name, versions in sorted(installed.items())
        if versions != {lock.get(name)}
    ]
    problems += [
        f"{name}=={version}: not installed"
        for name, version in sorted(lock.items())
        if name not in installed
    ]
    assert not problems, (
        "this venv is not requirements.lock (`make venv` installs the lock; `make lock` changes "
        "it on purpose):\n" + "\n".join(problems)
    )


def test_every_binder_pin_is_the_lock_version():
    lock = _lock()
    pins = _pins()
    assert pins, "binder/requirements.txt pins nothing"
    problems = [
        f"{name}=={version}: the lock has " + (f"=={lock[name]}" if name in lock else "nothing")
        for name, version in sorted(pins.items())
        if lock.get(name) != version
    ]
    assert not problems, (
        "binder/requirements.txt is not at requirements.lock's versions (`make lock` writes "
        "them):\n" + "\n".join(problems)
    )


def test_make_lock_writes_binder_pins_from_the_lock(tmp_path):
    """tools/binder_requirements.py, which `make lock` runs: every pin (and a bare name) goes to
    the lock's version, comments and index options stay, a name the lock lacks is an error."""
    lock = tmp_path / "requirements.lock"
    lock.write_text("# header\nipython==9.19.1\n    # via ipykernel\nray==2.60.0\n")
    binder = tmp_path / "requirements.txt"
    binder.write_text("# why\n--extra-index-url https://x/simple\n\nIPython==9.18.1  # kept\nray\n")
    tool = [sys.executable, str(ROOT / "tools" / "binder_requirements.py")]
    paths = ["--lock", str(lock), "--binder", str(binder)]

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([*tool, *args, *paths], capture_output=True, text=True, check=False)

    assert run("--check").returncode == 1
    assert run().returncode == 0
    assert binder.read_text() == (
        "# why\n--extra-index-url https://x/simple\n\nIPython==9.19.1  # kept\nray==2.60.0\n"
    )
    assert run("--check").returncode == 0
    binder.write_text("pandas==3.1.1\n")
    refused = run()
    assert refused.returncode != 0 and "pandas" in refused.stderr
    # and the repository's binder/requirements.txt is what it writes
    assert subprocess.run([*tool, "--check"], check=False).returncode == 0


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
