"""Print where pip is configured to find packages, as options for uv, which reads none of pip's
configuration (the Makefile passes them to `uv pip sync` and `uv pip compile`).

pip's settings come from its configuration files and PIP_* variables (`pip config list`); the
index-url, extra-index-url and find-links that pip would use become uv's --index-url,
--extra-index-url and --find-links, in pip's order. Nothing is printed where pip has none (uv
then uses PyPI alone). On the machine this was written on they are local indexes and a folder
of wheels holding torch's CUDA build and its nvidia-* libraries, which must come from there and
not as several GB from PyPI.

    python3 tools/pip_sources.py     # run with the Python whose pip is configured
"""

from __future__ import annotations

import shlex
import subprocess
import sys

# pip's precedence: a PIP_* variable over the [install] section over [global]
SECTIONS = (":env:", "install", "global")
OPTIONS = ("index-url", "extra-index-url", "find-links")


def pip_settings(listing: str) -> dict[str, list[str]]:
    """``{option: values}`` for OPTIONS from ``pip config list`` output, each option's value
    taken from the section that pip itself would read it from."""
    found: dict[tuple[str, str], list[str]] = {}
    for line in listing.splitlines():
        key, sep, value = line.partition("=")
        section, _, option = key.rpartition(".")
        if sep and option in OPTIONS and section in SECTIONS:
            # pip prints the value quoted; several values are separated by whitespace
            found[section, option] = " ".join(shlex.split(value)).split()
    settings = {}
    for option in OPTIONS:
        for section in SECTIONS:
            if (section, option) in found:
                settings[option] = found[section, option]
                break
    return settings


def uv_options(settings: dict[str, list[str]]) -> list[str]:
    return [f"--{option}={value}" for option in OPTIONS for value in settings.get(option, [])]


def main() -> int:
    listing = subprocess.run(
        [sys.executable, "-m", "pip", "config", "list"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout
    print(" ".join(uv_options(pip_settings(listing))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
