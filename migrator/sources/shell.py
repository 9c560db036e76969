"""aws-cli calls in shell scripts (setups made by hand, like the getting-started guides): which role each
instance profile holds (`aws iam add-role-to-instance-profile`), with simple `VAR=value` assignments of the
same script expanded. Anything computed (`$(...)`, a variable set elsewhere) is left unknown."""
from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

_ASSIGN = re.compile(r"^(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)=(.*)$")
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)")


@dataclass
class ProfileRole:
    path: str
    line: int
    profile: str
    role: str | None


def _logical_lines(text: str):
    """(1-based line, command text) with backslash continuations joined and comments dropped."""
    buf, start = "", 0
    for i, raw in enumerate(text.splitlines(), 1):
        line = raw.rstrip()
        if not buf:
            start = i
        if line.endswith("\\"):
            buf += line[:-1] + " "
            continue
        buf += line
        cmd = buf.strip()
        buf = ""
        if cmd and not cmd.startswith("#"):
            yield start, cmd


def _expand(word: str, env: dict[str, str]) -> str | None:
    if "$(" in word or "`" in word:
        return None
    missing = False

    def sub(m):
        nonlocal missing
        name = m.group(1) or m.group(2)
        if name not in env:
            missing = True
            return ""
        return env[name]
    out = _VAR.sub(sub, word)
    return None if missing else out


def _option(words: list[str], name: str) -> str | None:
    for i, w in enumerate(words):
        if w == name and i + 1 < len(words):
            return words[i + 1]
        if w.startswith(name + "="):
            return w.split("=", 1)[1]
    return None


def profile_roles(path: str, text: str) -> list[ProfileRole]:
    env: dict[str, str] = {}
    out: list[ProfileRole] = []
    for line, cmd in _logical_lines(text):
        a = _ASSIGN.match(cmd)
        if a and " " not in a.group(2).strip().strip("'\""):
            try:
                parts = shlex.split(a.group(2)) or [""]
            except ValueError:
                continue
            value = _expand(parts[0], env)
            if value is not None:
                env[a.group(1)] = value
            else:
                env.pop(a.group(1), None)
            continue
        if "aws" not in cmd or "instance-profile" not in cmd:
            continue
        try:
            words = shlex.split(cmd, comments=True)
        except ValueError:
            continue
        for i in range(len(words) - 2):
            if words[i] == "aws" and words[i + 1] == "iam" and words[i + 2] in (
                    "add-role-to-instance-profile", "create-instance-profile"):
                rest = words[i + 3:]
                profile = _option(rest, "--instance-profile-name")
                role = _option(rest, "--role-name")
                profile = _expand(profile, env) if profile else None
                role = _expand(role, env) if role else None
                if profile:
                    out.append(ProfileRole(path, line, profile, role))
    return out
