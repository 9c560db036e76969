"""How Karpenter's node role joins the cluster: an EKS access entry where the authentication mode allows one, else a
mapping in aws-auth where the root maps roles (the eks module's aws_auth_roles, a ConfigMap resource)."""
from __future__ import annotations

import posixpath
import re

from ....edits import TextEdit, line_start, to_newline
from ....sources import hcl as hclsrc
from .common import AUTH, NODE_MAPPING, RULE, _find, _mapping


class NodeAccess:
    """How Karpenter's node role joins the cluster: an access entry, else a mapping in aws-auth."""

    def access_entries(self, d: str) -> bool:
        """Can a node role join through an EKS access entry (authentication mode API or API_AND_CONFIG_MAP)? The eks
        module before v20 has no access entries at all (aws-auth only); v20+ and aws_eks_cluster by their mode."""
        from ....modmajor import constraint
        for p, b in self.repo.blocks("resource", "aws_eks_cluster"):
            if (posixpath.dirname(p) or ".") != d:
                continue
            mode = None
            for ac in b.sub("access_config"):
                e = ac.attr("authentication_mode")
                mode = e.literal() if e is not None else None
            return mode in ("API", "API_AND_CONFIG_MAP")
        below = AUTH["cluster_no_access_entries_below"]
        for p, b in self.cas.eks_modules:
            if (posixpath.dirname(p) or ".") != d:
                continue
            e = b.attr("authentication_mode")
            if e is not None and e.literal() == "CONFIG_MAP":
                return False
            v = b.attr("version")
            ver = constraint(str(v.literal()))[1] if v is not None and v.literal() else None
            if ver is not None and ver[0] < below:
                return False
        return True

    def map_aws_auth(self, d: str, module: str) -> bool:
        """The node role mapped where the root maps roles in aws-auth: the eks module's `aws_auth_roles` list (v18,
        v19, or the v20 aws-auth submodule), one entry added as the others are written. False where there is none
        migrator can edit (said by the caller)."""
        want = re.compile(AUTH["cluster_source"])
        for p, b in self.repo.blocks("module"):
            src = b.attr("source")
            if (posixpath.dirname(p) or ".") != d or src is None or not (
                    want.search(str(src.literal() or "")) or "modules/aws-auth" in str(src.literal() or "")):
                continue
            e = b.attr("aws_auth_roles")
            text = self.repo.text(p)
            if e is not None and e.kind == "ref" and re.fullmatch(r"(var|local)\.[\w-]+", e.source.strip()):
                # the roles the module is given (`var.aws_auth_roles`): the node role joins them here, as one more item
                head = text[line_start(text, e.start):e.start]          # "  aws_auth_roles = "
                ind = head[:len(head) - len(head.lstrip())]
                new = f"concat({e.source.strip()}, [\n{ind}  {_mapping(module, ind + '  ')},\n{ind}])"
                self.res.edits.append(TextEdit(p, e.start, e.end, to_newline(new, self.repo.files[p].newline), RULE))
                _find(self.res, "MIG-CAS-037", "info", p, hclsrc.line_of(text, e.start),
                      f"the cluster authenticates with aws-auth: Karpenter's node role is mapped in {b.address}."
                      f"aws_auth_roles, joined to {e.source.strip()} (no access entry)")
                return True
            if e is None or e.kind != "tuple" or not e.items or \
                    hclsrc.line_of(text, e.items[-1].start) == hclsrc.line_of(text, e.start):
                continue
            last = e.items[-1]
            ind = text[line_start(text, last.start):last.start]
            after = text[last.end:e.end]
            comma = after.lstrip().startswith(",")
            pos = last.end + (after.index(",") + 1 if comma else 0)
            entry = ("" if comma else ",") + "\n" + ind + _mapping(module, ind) + ("," if comma else "")
            self.res.edits.append(TextEdit(p, pos, pos, to_newline(entry, self.repo.files[p].newline), RULE))
            _find(self.res, "MIG-CAS-037", "info", p, hclsrc.line_of(text, e.start),
                  f"the cluster authenticates with aws-auth: Karpenter's node role is mapped in {b.address}.aws_auth_roles "
                  "(no access entry)")
            return True
        return self.map_configmap(d, module)

    def map_configmap(self, d: str, module: str) -> bool:
        """The node role mapped in an aws-auth ConfigMap the root writes as a Kubernetes provider resource, whose
        mapRoles is `yamlencode()` of a list: one more item in a list written out, or the list it is given
        (`var.roles`, `concat(...)`) joined to one. False for any other form (YAML text: said by the caller)."""
        for p, b in [(p, b) for kind in AUTH["configmap_resources"] for p, b in self.repo.blocks("resource", kind)]:
            meta = b.sub("metadata")
            name = meta[0].attr("name") if meta else None
            ns = meta[0].attr("namespace") if meta else None
            if (posixpath.dirname(p) or ".") != d or name is None or name.literal() != "aws-auth" or \
                    (ns is not None and ns.literal() != "kube-system"):
                continue
            data = b.attr("data")
            roles = next((x.value for x in data.entries if x.key == "mapRoles"), None) \
                if data is not None and data.kind == "object" else None
            text = self.repo.text(p)
            if roles is not None and roles.kind == "heredoc":
                return self._map_heredoc(p, b, roles, text, module)
            if roles is None or roles.kind != "call" or roles.name != "yamlencode" or len(roles.items) != 1:
                return False
            arg = roles.items[0]
            ls = line_start(text, roles.start)
            ind = text[ls:ls + len(text[ls:]) - len(text[ls:].lstrip(" \t"))]
            def item(base: str) -> str:
                return _mapping(module, base)
            def written_out(x) -> bool:         # a list literal whose items stand on lines of their own
                return x.kind == "tuple" and bool(x.items) and \
                    hclsrc.line_of(text, x.items[-1].start) != hclsrc.line_of(text, x.start)
            lists = [arg] if written_out(arg) else [x for x in arg.items if written_out(x)] \
                if arg.kind == "call" and arg.name == "concat" else []
            last = arg.items[-1] if arg.kind == "tuple" and arg.items else None
            if not lists and last is not None and last.kind == "object" and \
                    hclsrc.line_of(text, last.end) != hclsrc.line_of(text, last.start):
                # `yamlencode([{ ... }])`: the next item opens where the last one closes; terraform fmt writes that
                # `}, {` line at the items' fields' depth
                ls = line_start(text, last.end - 1)
                close = text[ls:last.end - 1]
                if close.strip():
                    return False
                body = item(close).split("\n", 1)[1].rsplit("\n", 1)[0]     # the fields' lines
                new = f"{close}  }}, {{\n{body}\n{close}}}"
                self.res.edits.append(TextEdit(p, ls, last.end, to_newline(new, self.repo.files[p].newline), RULE))
                self._mapped(p, b, text, roles)
                return True
            if lists:                           # one more item in the list written out (the last concat() gets)
                lst = lists[-1]
                last = lst.items[-1]
                inner = text[line_start(text, last.start):last.start]
                after = text[last.end:lst.end]
                comma = after.lstrip().startswith(",")
                pos = last.end + (after.index(",") + 1 if comma else 0)
                new, start, end = ("" if comma else ",") + f"\n{inner}" + item(inner) + ("," if comma else ""), pos, pos
            elif arg.kind in ("ref", "call", "tuple"):
                new, start, end = f"concat({arg.source.strip()}, [\n{ind}  {item(ind + '  ')},\n{ind}])", arg.start, arg.end
            else:
                return False
            self.res.edits.append(TextEdit(p, start, end, to_newline(new, self.repo.files[p].newline), RULE))
            self._mapped(p, b, text, roles)
            return True
        return False

    def _mapped(self, p: str, b, text: str, roles) -> None:
        _find(self.res, "MIG-CAS-037", "info", p, hclsrc.line_of(text, roles.start),
              f"the cluster authenticates with aws-auth: Karpenter's node role is mapped in {b.address}'s "
              "mapRoles (no access entry)")

    def _map_heredoc(self, p: str, b, roles, text: str, module: str) -> bool:
        """mapRoles written as YAML text: the node role's item copied from the text's own node mapping (its rolearn
        the karpenter module's output), or written as its items are, before the closing marker."""
        h = roles.heredoc
        body = text[h.body_start:h.body_end]
        lines = body.splitlines(keepends=True)
        starts = [i for i, ln in enumerate(lines) if re.match(r"\s*-\s+rolearn\s*:", ln)]
        if not starts or not body.endswith("\n"):
            return False
        ind = re.match(r"\s*", lines[starts[0]]).group(0)
        ends = starts[1:] + [len(lines)]
        items = ["".join(lines[a:z]).rstrip() + "\n" for a, z in zip(starts, ends)]
        node = next((x for x in reversed(items) if NODE_MAPPING["username"] in x), None)
        arn = f"${{module.{module}.node_iam_role_arn}}"
        if node is not None:
            new = re.sub(r"(rolearn\s*:\s*)(\"?)[^\n\"]*\2", lambda m: m.group(1) + m.group(2) + arn + m.group(2),
                         node, count=1)
        else:
            new = (f"{ind}- rolearn: {arn}\n{ind}  username: {NODE_MAPPING['username']}\n{ind}  groups:\n"
                   + "".join(f"{ind}    - {g}\n" for g in NODE_MAPPING["groups"]))
        pos = text.index("\n", h.body_start + len(body.rstrip())) + 1    # after its last line (blank lines stay below)
        self.res.edits.append(TextEdit(p, pos, pos, to_newline(new, self.repo.files[p].newline), RULE))
        self._mapped(p, b, text, roles)
        return True
