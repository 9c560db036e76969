"""aws-cli calls in shell scripts (setups made by hand, like the getting-started guides): which role each
instance profile holds (`aws iam add-role-to-instance-profile`), with simple `VAR=value` assignments of the
same script expanded. Anything computed (`$(...)`, a variable set elsewhere) is left unknown."""
from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field

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
    for line, _cmd, words in _matching(text, env, r"\baws\b.*instance-profile"):
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


@dataclass
class HelmCall:
    """`helm install` / `helm upgrade [--install]` of a chart in a script, with where its version is written."""
    path: str
    line: int
    chart: str                          # the chart reference as written (oci://.../karpenter, karpenter/karpenter)
    version: str | None                 # expanded (a VAR=value of the same script followed)
    span: tuple[int, int] | None        # where that version literal is written in the script (None: not one place)
    values: list[str]                   # -f / --values files as written (expanded)
    namespace: str | None
    release: str = ""                   # the release name (expanded where the script sets it)
    sets: dict = field(default_factory=dict)    # --set / --set-string key -> value (expanded; None: not known)
    raw_sets: dict = field(default_factory=dict)    # --set / --set-string key -> value as written (`$CLUSTER_NAME`)
    raw_version: str | None = None      # --version as written (`${TAG}`)

    def same_variable(self, key: str) -> str | None:
        """The variable both the chart version and --set `key`'s trailing `:tag` are written as (`--version ${TAG}`
        ... `controller.image=<repository>:${TAG}`), else None."""
        version = _VAR.fullmatch(self.raw_version or "")
        value = self.raw_sets.get(key) or ""
        tag = _VAR.fullmatch(value.rsplit(":", 1)[1]) if ":" in value else None
        if version and tag and (version.group(1) or version.group(2)) == (tag.group(1) or tag.group(2)):
            return version.group(1) or version.group(2)
        return None


def _offsets(text: str) -> list[int]:
    out, pos = [], 0
    for ln in text.splitlines(keepends=True):
        out.append(pos)
        pos += len(ln)
    return out + [pos]


def _commands(text: str, env: dict[str, str], where: dict[str, tuple[int, int]] | None = None):
    """(line, command) of a script's commands; its simple `VAR=value` lines are read into `env` as they come (and,
    given `where`, the span of each literal value), so each command sees the variables set above it."""
    starts = _offsets(text)
    for line, cmd in _logical_lines(text):
        a = _ASSIGN.match(cmd)
        raw = a.group(2).strip().strip("'\"") if a else ""
        if a and " " not in raw:
            try:
                raw = (shlex.split(a.group(2)) or [""])[0]      # quotes as the shell reads them
            except ValueError:
                continue
            value = _expand(raw, env)
            if value is None:
                env.pop(a.group(1), None)
                continue
            env[a.group(1)] = value
            if where is not None:
                src = text[starts[line - 1]:starts[line]]
                i = src.find(raw, src.find("="))
                where[a.group(1)] = (starts[line - 1] + i, starts[line - 1] + i + len(raw))
            continue
        yield line, cmd


def _matching(text: str, env: dict[str, str], pattern: str, where: dict | None = None):
    """(line, command, its words) of the commands matching a pattern (unparsable quoting skipped)."""
    for line, cmd in _commands(text, env, where):
        if not re.search(pattern, cmd):
            continue
        try:
            yield line, cmd, shlex.split(cmd, comments=True)
        except ValueError:
            continue


def helm_calls(path: str, text: str) -> list[HelmCall]:
    """Every `helm install|upgrade` in a script (not `helm template`: rendered charts are read from their output)."""
    env: dict[str, str] = {}
    where: dict[str, tuple[int, int]] = {}          # VAR -> span of its literal value
    starts = _offsets(text)
    out: list[HelmCall] = []
    for line, cmd, words in _matching(text, env, r"\bhelm\s+(?:upgrade|install)\b", where):
        if "helm" not in words:
            continue
        rest = words[words.index("helm") + 1:]
        if not rest or rest[0] not in ("upgrade", "install"):
            continue
        positional, skip = [], False
        for w in rest[1:]:
            if skip:
                skip = False
            elif w.startswith("-"):
                skip = "=" not in w and w not in _FLAGS        # a flag that takes the next word
            else:
                positional.append(w)
        if len(positional) < 2:
            continue
        chart = _expand(positional[1], env) or positional[1]
        raw_version = _option(rest, "--version")
        version = _expand(raw_version, env) if raw_version else None
        span = None
        if raw_version:
            m = _VAR.fullmatch(raw_version)
            if m:
                span = where.get(m.group(1) or m.group(2))
            else:
                block = text[starts[line - 1]:]
                k = block.find(raw_version, block.find("--version"))
                if k >= 0:
                    span = (starts[line - 1] + k, starts[line - 1] + k + len(raw_version))
        values = [_expand(w, env) or w for i, w in enumerate(rest) if i > 0 and rest[i - 1] in ("-f", "--values")]
        values += [_expand(w.split("=", 1)[1], env) or w for w in rest if w.startswith(("--values=", "-f="))]
        ns = _option(rest, "--namespace") or _option(rest, "-n")
        sets, raw = {}, {}
        for i, w in enumerate(rest):
            pair = rest[i + 1] if w in ("--set", "--set-string") and i + 1 < len(rest) else \
                w.split("=", 1)[1] if w.startswith(("--set=", "--set-string=")) else None
            if pair and "=" in pair:
                k, v = pair.split("=", 1)
                sets[k], raw[k] = _expand(v, env), v
        out.append(HelmCall(path, line, chart, version, span, values, _expand(ns, env) if ns else None,
                            _expand(positional[0], env) or positional[0], sets, raw, raw_version))
    return out


def kubectl_applies(text: str) -> list[tuple[int, str]]:
    """(line, what) of every `kubectl apply -f <file or URL>` / `kubectl create -f` in a script, the script's
    `VAR=value` lines expanded (a word still holding `$` is kept as written)."""
    env: dict[str, str] = {}
    out = []
    for line, _cmd, words in _matching(text, env, r"\bkubectl\b.*\b(?:apply|create)\b"):
        for i, w in enumerate(words):
            target = words[i + 1] if w in ("-f", "--filename") and i + 1 < len(words) else \
                w.split("=", 1)[1] if w.startswith(("-f=", "--filename=")) else None
            if target:
                out.append((line, _expand(target, env) or target))
    return out


def copied_files(text: str) -> list[tuple[int, str, str]]:
    """(line, source, destination) of every `cp [-flags] <file> <file>` in a script (the script's `VAR=value` lines
    expanded; a copy to a folder or of several files is not one of them)."""
    env: dict[str, str] = {}
    out = []
    for line, _cmd, words in _matching(text, env, r"(?:^|[;&|]\s*)cp\s"):
        args = [w for w in words[words.index("cp") + 1:] if not w.startswith("-")] if "cp" in words else []
        if len(args) == 2 and not args[1].endswith("/"):
            src, dst = (_expand(a, env) or a for a in args)
            out.append((line, src, dst))
    return out


_WRITE = re.compile(r"""<<-?\s*['"]?([A-Za-z_][A-Za-z0-9_]*)['"]?\s*>\s*(\S+)""")


def written_files(text: str) -> list[tuple[int, str, str]]:
    """(line, file, body) of every file a script writes from a heredoc (`cat <<EOF > path ... EOF`), its body as
    written (`$VAR`s unexpanded)."""
    out = []
    lines = text.splitlines(keepends=True)
    i = 0
    while i < len(lines):
        m = _WRITE.search(lines[i])
        if m is None or lines[i].lstrip().startswith("#"):
            i += 1
            continue
        end = next((j for j in range(i + 1, len(lines)) if lines[j].strip() == m.group(1)), None)
        if end is None:
            break
        out.append((i + 1, m.group(2).strip("'\""), "".join(lines[i + 1:end])))
        i = end + 1
    return out


_FLAGS = {"--install", "--create-namespace", "--wait", "--atomic", "--reuse-values", "--reset-values", "--dry-run",
          "--debug", "--force", "--devel", "--skip-crds", "--cleanup-on-fail", "--dependency-update"}
