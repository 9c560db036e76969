"""Regenerate migrator/knowledge/iam/module/*.json: the controller policy of terraform-aws-modules/eks
`modules/karpenter` per release where it changed, as the minified JSON the AWS provider's aws_iam_policy_document
renders, with the values a root decides left as `${...}` placeholders (size checks substitute them).

Source: the module's own `modules/karpenter/policy.tf` (v20.24.0+; v20's `v1` document, chosen by
enable_v1_permissions = true) read from a git copy of terraform-aws-modules/terraform-aws-eks:

    python scripts/module_policy.py /path/to/terraform-aws-eks.git

The JSON shape follows the provider: `Version`, then per statement `Sid`, `Effect` (always written), `Action`,
`Resource`, `Condition` (test -> variable -> values); a one-element list is written as a string. Statements the
module adds from inputs (`iam_policy_statements`) are not part of the template; the spot-termination statement is
(its input defaults to true) and marked so a call that turns it off can drop it.
"""
from __future__ import annotations

import io
import json
import pathlib
import re
import subprocess
import sys

import hcl2

OUT = pathlib.Path(__file__).resolve().parent.parent / "migrator" / "knowledge" / "iam" / "module"
FIRST = (20, 24, 0)      # enable_v1_permissions: the first module policy for Karpenter v1

# module expressions -> placeholders the size check substitutes
TOKENS = {"local.partition": "${partition}", "local.region": "${region}", "local.account_id": "${account_id}",
          "var.cluster_name": "${cluster_name}", "local.dns_suffix": "${dns_suffix}"}
# whole-value expressions (a list) -> what they are when the root does not set the input
LISTS = [
    (r"coalescelist\(var\.ami_id_ssm_parameter_arns", ["arn:${partition}:ssm:${region}::parameter/aws/service/*"]),
    (r"aws_sqs_queue\.this\[0\]\.arn", ["arn:${partition}:sqs:${region}:${account_id}:${queue_name}"]),
    (r"aws_iam_role\.node\[0\]\.arn", ["${node_role_arn}"]),
    (r"distinct\(", ["${ec2_services}"]),
]


def git(repo: str, *args: str) -> str:
    return subprocess.run(["git", "--git-dir", repo, *args], check=True, capture_output=True, text=True).stdout


def tags(repo: str) -> list[str]:
    found = []
    for t in git(repo, "tag").split():
        m = re.fullmatch(r"v(\d+)\.(\d+)\.(\d+)", t)
        if m and tuple(map(int, m.groups())) >= FIRST:
            found.append(t)
    return sorted(found, key=lambda t: tuple(map(int, t[1:].split("."))))


def unquote(s: str) -> str:
    s = s[1:-1] if s.startswith('"') and s.endswith('"') else s
    for expr, token in TOKENS.items():
        s = s.replace("${" + expr + "}", token)
    return s


def values(v) -> list[str]:
    if isinstance(v, list) and len(v) == 1 and any(re.search(pat, str(v[0])) for pat, _ in LISTS):
        v = v[0]
    if isinstance(v, list):
        out = []
        for x in v:
            x = str(x)
            if x.startswith("${") and x.endswith("}") and x[2:-1] in TOKENS:
                out.append(TOKENS[x[2:-1]])
            else:
                out.append(unquote(x))
        return out
    s = str(v)
    for pat, rendered in LISTS:
        if re.search(pat, s):
            return list(rendered)
    raise SystemExit(f"unknown expression in policy.tf: {s}")


def one(xs: list[str]):
    return xs[0] if len(xs) == 1 else xs


def statement(blk: dict, optional: str | None = None) -> dict:
    st: dict = {}
    if "sid" in blk:
        st["Sid"] = unquote(str(blk["sid"]))
    st["Effect"] = unquote(str(blk.get("effect", '"Allow"')))
    st["Action"] = one(values(blk["actions"]))
    st["Resource"] = one(values(blk["resources"]))
    cond: dict = {}
    for c in blk.get("condition", []):
        cond.setdefault(unquote(str(c["test"])), {})[unquote(str(c["variable"]))] = one(values(c["values"]))
    if cond:
        st["Condition"] = cond
    if optional:
        st["Sid"] = st.get("Sid", "")
    return st


def document(doc: dict) -> tuple[dict, list[str]]:
    stmts, optional = [], []
    for blk in doc.get("statement", []):
        stmts.append(statement(blk))
    for dyn in doc.get("dynamic", []):
        body = dyn.get('"statement"') or dyn.get("statement")
        if body is None:
            continue
        each = str(body.get("for_each", ""))
        if "iam_policy_statements" in each:
            continue               # the caller's own statements
        if "enable_spot_termination" not in each:
            raise SystemExit(f"unknown dynamic statement: {each}")
        for blk in body["content"]:
            st = statement(blk)
            stmts.append(st)
            optional.append(st["Sid"])
    return {"Version": "2012-10-17", "Statement": stmts}, optional


def controller(text: str) -> dict:
    data = hcl2.load(io.StringIO(text))
    docs = {}
    for d in data.get("data", []):
        for kind, named in d.items():
            if kind.strip('"') != "aws_iam_policy_document":
                continue
            for name, body in named.items():
                docs[name.strip('"')] = body
    # v20: `v1` (enable_v1_permissions = true); v21: `controller`
    return docs["v1"] if "v1" in docs else docs["controller"]


def main(repo: str) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    last = None
    for t in tags(repo):
        try:
            text = git(repo, "show", f"{t}:modules/karpenter/policy.tf")
        except subprocess.CalledProcessError:
            continue
        doc, optional = document(controller(text))
        template = json.dumps(doc, separators=(",", ":"))
        if template == last:
            continue
        last = template
        row = {"module": t[1:], "source": f"terraform-aws-modules/terraform-aws-eks@{t}:modules/karpenter/policy.tf",
               "optional": {"enable_spot_termination": optional}, "template": template}
        (OUT / f"{t[1:]}.json").write_text(json.dumps(row, indent=1) + "\n")
        print(t, len(template))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "/work/.mirror/terraform-aws-modules+terraform-aws-eks/repo")
