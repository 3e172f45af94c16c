"""Where a benchmark result comes from: the commit it measured (S2S_COMMIT on machines without the .git folder)."""
from __future__ import annotations

import os
import subprocess


def commit() -> str:
    return os.environ.get("S2S_COMMIT") or subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
