"""Lays the catalogue's applications out from the fetched repositories, outside the repository by default.

    python3 bench/apps/layout.py DEST [--apps a,b,...] [--label held-out|dev] [--mirrors DIR]

DEST/NAME/ receives, for each application, the tracked files of its `dir` and `extra` paths at the catalogue's commit,
at their repository paths (`git archive`: no build outputs, no history); the catalogue's commands run at DEST/NAME.
The repositories come from the search tool's fetch (bare git directories under /work/.mirror/OWNER+NAME/repo).
"""
from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import tomllib

HERE = Path(__file__).resolve().parent
MIRRORS = Path("/work/.mirror")


def load(catalog: Path = HERE / "catalog.toml") -> list[dict[str, Any]]:
    with open(catalog, "rb") as fh:
        return list(tomllib.load(fh).get("app", []))


def select(apps: list[dict[str, Any]], names: str | None = None, label: str | None = None) -> list[dict[str, Any]]:
    """The applications named (comma-separated, in that order) or of one label ("held-out" / "dev"), else all."""
    if names:
        by = {a["name"]: a for a in apps}
        missing = [n for n in names.split(",") if n not in by]
        if missing:
            raise SystemExit(f"not in the catalogue: {', '.join(missing)}")
        return [by[n] for n in names.split(",")]
    if label:
        want = "held-out split" if label.startswith("held") else "development corpus"
        return [a for a in apps if a["label"] == want]
    return apps


def lay_out(app: dict[str, Any], dest: Path, mirrors: Path = MIRRORS) -> Path:
    git = mirrors / app["repo"].replace("/", "+") / "repo"
    root = dest / app["name"]
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    paths = [app["dir"], *app.get("extra", [])]
    archive = subprocess.run(["git", "-C", str(git), "archive", "--format=tar", app["commit"], *paths],
                             capture_output=True, check=True).stdout
    subprocess.run(["tar", "-xf", "-", "-C", str(root)], input=archive, check=True)
    return root


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dest", type=Path)
    ap.add_argument("--apps")
    ap.add_argument("--label", choices=["held-out", "dev"])
    ap.add_argument("--mirrors", type=Path, default=MIRRORS)
    ap.add_argument("--catalog", type=Path, default=HERE / "catalog.toml")
    args = ap.parse_args(argv)
    chosen = select(load(args.catalog), args.apps, args.label)
    for app in chosen:
        lay_out(app, args.dest, args.mirrors)
    size = sum(f.stat().st_size for f in args.dest.rglob("*") if f.is_file())
    print(f"{len(chosen)} applications laid out in {args.dest} ({size / 2**20:.1f} MiB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
