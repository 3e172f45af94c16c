"""Old CUDA in extracted code: what the current toolkit no longer accepts, fixed or named before the first build.

The MEP's reference must build with today's nvcc. Removed runtime APIs and unsynchronized warp
intrinsics have exact replacements and are rewritten (and the rewrite travels back with any winner);
texture references have none and are reported as a limit.
"""
from __future__ import annotations

import re

from s2s.lang.cuda_compat import RENAMES, rename_removed_apis, sync_shuffles

_TEXREF = re.compile(r"\btexture\s*<[^>]*>\s*\w+")


def modernize(text: str) -> tuple[str, list[str]]:
    out, renamed = rename_removed_apis(text)
    notes = [f"{old} was removed from CUDA; replaced by {RENAMES[old]}" for old in renamed]
    out, names = sync_shuffles(out)
    if names:
        notes.append(f"{', '.join(names)} without a mask no longer exist for sm_70+; rewritten as *_sync(0xffffffffu, ...) "
                     "(all lanes: correct where the whole warp takes part, as the original assumed)")
    for m in _TEXREF.finditer(out):
        notes.append(f"limit: texture reference '{m.group(0)}' (removed in CUDA 12) cannot be built by the MEP; "
                     "convert it to a texture object or plain loads (__ldg)")
    return out, notes
