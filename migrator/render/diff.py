"""`--format diff`: every change of the plan as one patch that `git apply` (and `patch -p1`) accepts: git headers,
new files from /dev/null with their mode, deleted files with the mode they have on disk, relative to the root."""
from __future__ import annotations

import os
import stat

from ..plan import Plan


def _mode(plan: Plan, path: str) -> str:
    try:
        st = os.stat(plan.root / path)
    except OSError:
        return "100644"
    return "100755" if st.st_mode & stat.S_IXUSR else "100644"


def render(plan: Plan) -> str:
    out = []
    for c in plan.changes:
        body = c.diff
        if not body:
            continue
        head = f"diff --git a/{c.path} b/{c.path}\n"
        if c.action == "create":
            head += "new file mode 100644\n"
        elif c.action == "delete":
            head += f"deleted file mode {_mode(plan, c.path)}\n"
        out.append(head + body)
    return "".join(out)
