"""Chart versions as repositories write them: a version (`1.9.2`, `v0.37.0`) or a Helm / Flux semver constraint
(`1.9.*`, `~1.9`, `^1.9`, `>=1.9 <2`), read the way Helm and Flux read them (Masterminds semver): a constraint stands
for the lowest release it admits (where a cluster pinned by it may stand).
"""
from __future__ import annotations

import re


def parse_version(v: str) -> tuple[int, ...] | None:
    m = re.fullmatch(r"v?(\d+)\.(\d+)(?:\.(\d+))?(?:[-+].*)?", str(v).strip())
    if not m:
        return None
    return tuple(int(x) for x in m.groups() if x is not None)


_PARTIAL = re.compile(r"v?(\d+)(?:\.(\d+|[*xX]))?(?:\.(\d+|[*xX]))?")
_CLAUSE = re.compile(r"(>=|<=|!=|=|>|<|~|\^)?\s*(v?\d+(?:\.(?:\d+|[*xX])){0,2})")


def _bounds(op: str, raw: str) -> tuple[tuple, tuple | None, bool]:
    """(lower, upper, upper included) of one semver constraint clause, as Helm and Flux read it (Masterminds)."""
    m = _PARTIAL.fullmatch(raw)
    parts = [g for g in m.groups()]
    nums = [int(x) for x in parts if x is not None and x.isdigit()]
    wild = len(nums) < 3                     # 1.9, 1.9.*, 1.* : the parts left out are wildcards
    low = tuple(nums + [0] * (3 - len(nums)))
    nxt = lambda i: tuple(nums[:i][:-1] + [nums[i - 1] + 1] + [0] * (3 - i))    # noqa: E731
    if op in ("", "=") and wild:
        return low, (nxt(len(nums)) if nums else None), False
    if op in ("", "="):
        return low, low, True
    if op == ">=":
        return low, None, False
    if op == ">":
        return (tuple(nums + [0] * (3 - len(nums))) if not wild else nxt(len(nums))), None, False
    if op == "<":
        return (0, 0, 0), low, False
    if op == "<=":
        return (0, 0, 0), (nxt(len(nums)) if wild else low), not wild
    if op == "~":                           # ~1.9 / ~1.9.2: the same minor (~1: the same major)
        return low, (nxt(2) if len(nums) >= 2 else nxt(1)), False
    if op == "^":                           # ^1.9: the same major (^0.9: the same minor)
        return low, (nxt(1) if nums[0] > 0 or len(nums) < 2 else nxt(2)), False
    return low, None, False


def version_range(raw: str) -> list[list[tuple]] | None:
    """A Helm / Flux semver constraint (`1.9.*`, `~1.9`, `^1.9`, `>=1.9 <2`, `>=1.9.0, <2.0.0`, `1.9 || 1.10`) as
    alternatives of (lower, upper, upper included) clauses; None when it is a plain version or not a constraint."""
    text = str(raw).strip()
    if not text or parse_version(text) is not None and len(text.split(".")) == 3:
        return None
    out = []
    for alt in text.split("||"):
        clauses = []
        rest = alt.replace(",", " ").strip()
        while rest:
            m = _CLAUSE.match(rest)
            if m is None:
                return None
            clauses.append(_bounds(m.group(1) or "", m.group(2)))
            rest = rest[m.end():].strip()
        if not clauses:
            return None
        out.append(clauses)
    return out


def range_floor(raw: str) -> str | None:
    """The lowest release a constraint admits (what a cluster pinned by it may run), as a version."""
    alts = version_range(raw)
    if not alts:
        return None
    low = min(max(c[0] for c in alt) for alt in alts)
    return ".".join(map(str, low))


def admits(raw: str, version: str) -> bool:
    """Does a constraint admit a version?"""
    v = parse_version(version)
    alts = version_range(raw)
    if v is None or not alts:
        return False
    v = tuple(list(v) + [0] * (3 - len(v)))
    return any(all(v >= lo and (hi is None or v < hi or (inc and v == hi)) for lo, hi, inc in alt) for alt in alts)


def version_of(raw) -> str | None:
    """A chart version as written: a version, else the lowest one a range admits."""
    if raw is None:
        return None
    if parse_version(str(raw)) is not None:
        return str(raw).strip().lstrip("v")
    return range_floor(str(raw))


def shift_range(raw: str, target: str) -> str | None:
    """A constraint of a shape teams write moved to the target's minor, written the same way (`1.9.*` -> `1.14.*`,
    `~1.9` -> `~1.14`, `>=1.9.0 <1.10.0` -> `>=1.14.0 <1.15.0`, `^1.9.2` -> `^1.14.1`); None for any other shape."""
    t = parse_version(target)
    if t is None or len(t) < 3:
        return None
    text = str(raw).strip()
    m = re.fullmatch(r"(v?)(\d+)\.(\d+)\.([*xX])", text)
    if m:
        return f"{m.group(1)}{t[0]}.{t[1]}.{m.group(4)}"
    m = re.fullmatch(r"~\s*(v?)(\d+)\.(\d+)(\.\d+)?", text)
    if m:
        return f"~{m.group(1)}{t[0]}.{t[1]}" + (f".{t[2]}" if m.group(4) else "")
    m = re.fullmatch(r"\^\s*(v?)\d+\.\d+\.\d+", text)
    if m:
        return f"^{m.group(1)}{t[0]}.{t[1]}.{t[2]}"
    m = re.fullmatch(r">=\s*(v?)(\d+)\.(\d+)\.(\d+)(\s*,?\s*)<\s*v?(\d+)\.(\d+)\.(\d+)", text)
    if m and (int(m.group(6)), int(m.group(7))) == (int(m.group(2)), int(m.group(3)) + 1):
        return f">={m.group(1)}{t[0]}.{t[1]}.0{m.group(5)}<{m.group(1)}{t[0]}.{t[1] + 1}.0"
    return None


def constraint(v: str) -> tuple[str, tuple[int, ...] | None]:
    """('~> ', (19, 16, 0)) from '~> 19.16' / '19.16.0' / '>= 19.0' / '>= 19.0, < 20.0' (the lower bound)."""
    first = v.split(",")[0]
    m = re.fullmatch(r"\s*(~>|>=|=|<=|>|<)?\s*v?(\d+)(?:\.(\d+))?(?:\.(\d+))?\s*", first)
    if not m:
        return "", None
    return (m.group(1) or ""), tuple(int(x or 0) for x in m.group(2, 3, 4))


def pinned(block) -> str:
    """The version a module call pins as written: its `version`, else the tag of a git source (`?ref=v1.2.2`)."""
    v = block.attr("version")
    raw = str(v.literal()) if v is not None and v.literal() else ""
    if not raw:
        src = block.attr("source")
        m = re.search(r"[?&]ref=v?(\d+\.\d+\.\d+)", str(src.literal() or "")) if src is not None else None
        raw = m.group(1) if m else ""
    return raw


def module_default(block, table: list[dict]) -> str | None:
    """The chart version a module call installs by default: the row of its table (module version `from` -> `chart`)
    for the version the call pins (an exact version, a constraint's newest match, a git `?ref=`; unpinned: the
    newest)."""
    facts = {"default_chart": table}
    raw = pinned(block)
    if not raw:                         # unpinned: terraform init installs the newest release
        return facts["default_chart"][-1]["chart"].lstrip("v")
    op, ver = constraint(raw)
    if ver is None:
        return None
    if op == "~>":                      # the newest release the constraint allows is what terraform init installs
        parts = raw.split("~>", 1)[1].strip().count(".")
        upper = (ver[0] + 1, 0, 0) if parts < 2 else (ver[0], ver[1] + 1, 0)
    elif op in (">=", ">"):
        upper = (10 ** 6,)
    else:
        upper = None
    rows = [r for r in facts["default_chart"] if parse_version(r["from"]) < upper] if upper \
        else [r for r in facts["default_chart"] if parse_version(r["from"]) <= ver]
    return rows[-1]["chart"].lstrip("v") if rows else None


def newest_admitted(raw: str, newest: str) -> tuple[int, ...] | None:
    """The release `terraform init` installs for a module version constraint: the version itself, else the
    newest release the constraint admits (no newer than `newest`, the newest release migrator knows; a bound
    below it is read as the last release under that bound)."""
    op, ver = constraint(raw)
    if ver is None:
        return None
    top = parse_version(newest)
    if op == "~>":
        parts = raw.split(",")[0].split("~>", 1)[1].strip().count(".")
        upper = (ver[0] + 1, 0, 0) if parts < 2 else (ver[0], ver[1] + 1, 0)
    elif op in (">=", ">"):
        m = re.search(r"<\s*v?(\d+)(?:\.(\d+))?(?:\.(\d+))?", raw)
        upper = tuple(int(x or 0) for x in m.groups()) if m else None
        if upper is None:
            return max(ver, top)
    else:
        return ver
    if top < upper:
        return max(ver, top)
    below = list(upper)
    for i in (2, 1, 0):                     # the release just under the bound: 22.0.0 -> 21.999.999
        if below[i] > 0:
            below[i] -= 1
            return tuple(below[: i + 1] + [999] * (2 - i))
    return ver
