"""Where a benchmark result comes from: the commit it measured (S2S_COMMIT on machines without the .git folder)."""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path


def commit() -> str:
    return os.environ.get("S2S_COMMIT") or subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()


def write_result(out: Path, stem: str, doc: object, md: str | None = None) -> None:
    """OUT/STEM.json (and OUT/STEM.md, a short table for people): every benchmark's result files."""
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{stem}.json").write_text(json.dumps(doc, indent=1) + "\n")
    if md is not None:
        (out / f"{stem}.md").write_text(md if md.endswith("\n") else md + "\n")
