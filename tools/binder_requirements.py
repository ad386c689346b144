"""Write binder/requirements.txt's pins at the versions requirements.lock holds (`make lock` runs
this after locking).

binder/requirements.txt names, by hand and with its comments, what mybinder.org installs: what the
notebooks need, a subset of what the tests need. The versions are not chosen there: each
``name==version`` line (or a bare ``name`` line, to add a package) is rewritten to the lock's
version; comments, blank lines and index options are kept as they are. A name the lock lacks is an
error. ``--check`` writes nothing and fails when binder/requirements.txt is not up to date.

    python tools/binder_requirements.py [--check] [--lock requirements.lock]
        [--binder binder/requirements.txt]
"""

from __future__ import annotations

import argparse
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
PIN = re.compile(r"^(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)==(?P<version>[A-Za-z0-9.+!-]+)$")
# a binder line: a name, perhaps pinned, perhaps followed by a comment
BINDER_LINE = re.compile(
    r"^(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)(?:==(?P<version>[A-Za-z0-9.+!-]+))?"
    r"(?P<comment>\s+#.*)?$"
)


def normalize(name: str) -> str:
    """A distribution name as pip compares them (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def read_lock(path: pathlib.Path) -> dict[str, str]:
    """``{normalized name: version}`` of a lock written by ``uv pip compile``."""
    pins: dict[str, str] = {}
    for number, raw in enumerate(path.read_text().splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        match = PIN.match(line)
        if not match:
            raise SystemExit(f"{path}:{number}: {raw!r} is not `name==version`")
        pins[normalize(match["name"])] = match["version"]
    return pins


def render(binder: str, lock: dict[str, str], where: str = "binder/requirements.txt") -> str:
    """binder/requirements.txt's text with every package line at the lock's version."""
    lines = []
    missing = []
    for raw in binder.splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", "-")):
            lines.append(raw)
            continue
        match = BINDER_LINE.match(line)
        if not match:
            raise SystemExit(f"{where}: {raw!r} is not `name==version`")
        version = lock.get(normalize(match["name"]))
        if version is None:
            missing.append(match["name"])
            lines.append(raw)
            continue
        lines.append(f"{match['name']}=={version}{match['comment'] or ''}")
    if missing:
        raise SystemExit(
            f"{where} names packages requirements.lock does not pin: {', '.join(missing)} "
            "(add what provides them to pyproject.toml's extras, then `make lock`)"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="write nothing; fail if stale")
    parser.add_argument("--lock", type=pathlib.Path, default=ROOT / "requirements.lock")
    parser.add_argument("--binder", type=pathlib.Path, default=ROOT / "binder" / "requirements.txt")
    args = parser.parse_args(argv)
    old = args.binder.read_text()
    new = render(old, read_lock(args.lock), str(args.binder))
    if new == old:
        return 0
    if args.check:
        print(f"{args.binder} is not at {args.lock}'s versions: run `make lock`", file=sys.stderr)
        return 1
    args.binder.write_text(new)
    print(f"{args.binder}: pins written from {args.lock}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
