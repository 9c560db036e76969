"""Auto Mode on an eksctl ClusterConfig: autoModeConfig enabled with no built-in pool, add-on versions below Auto Mode's
minimums raised."""
from __future__ import annotations

import re

from ....edits import TextEdit
from ....sources import hcl as hclsrc
from .common import CL, FACTS, RULE, _addon_key, _find


class EksctlCluster:
    """An eksctl ClusterConfig: autoModeConfig turned on, add-on versions below Auto Mode's minimums raised."""

    # -- eksctl -----------------------------------------------------------------------------------------------------
    def eksctl(self, p: str, doc, obj) -> None:
        res = self.res
        res.installer, res.eksctl_file = "eksctl", p
        meta = obj.get("metadata") or {}
        res.address = str(meta.get("name"))
        res.cluster_literal = str(meta.get("name")) if meta.get("name") else None
        res.partition = next((v for k, v in CL["partitions"].items() if str(meta.get("region") or "").startswith(k)),
                             "aws")
        amc = obj.get("autoModeConfig")
        res.where = f"{p}:{self.repo.text(p).count(chr(10), 0, doc.start) + 1}"
        role = f"{res.cluster_literal}{CL['eksctl']['node_role_suffix']}" if res.cluster_literal else None
        if isinstance(amc, dict) and amc.get("enabled") is True:
            res.enabled = True
            arn = amc.get("nodeRoleARN")
            res.role_literal = arn.rsplit("/", 1)[1] if isinstance(arn, str) and "/" in arn else role
            return
        text = self.repo.text(p)
        nl = self.repo.files[p].newline
        res.role_literal = role
        if isinstance(amc, dict) and amc.get("enabled") is False:
            ln, col = amc.lc.value("enabled")
            lines = doc.text.splitlines(keepends=True)
            at = doc.start + sum(len(x) for x in lines[:ln]) + col
            self.edit(TextEdit(p, at, at + len("false"), "true", RULE))
        elif amc is None:
            end = doc.end
            while end > doc.start and text[end - 1] in "\r\n":
                end -= 1
            self.edit(TextEdit(p, end, end, f"{nl}{nl}# EKS Auto Mode, with no built-in node pool while workloads move "
                                            f"(migrator){nl}autoModeConfig:{nl}  enabled: true{nl}  nodePools: []",
                               RULE))
        else:
            _find(res, "MIG-AUTO-013", "warning", p, 1,
                  f"eksctl cluster {res.address}: autoModeConfig is written in a way migrator does not edit",
                  f"set autoModeConfig: {{enabled: true, nodePools: []}} in {p} by hand, then run migrator again")
            return
        res.notes.append(f"{p}: autoModeConfig enabled with no built-in node pool; the node role {role} of the "
                         "NodeClasses and its EC2 access entry are created by the commands below")
        self.eksctl_addons(p, doc, obj)

    def eksctl_addons(self, p: str, doc, obj) -> None:
        """`addons[].version` below Auto Mode's minimums raised in place (eksctl applies them with
        `eksctl update addon -f`); `latest` and unset versions are left alone."""
        text = self.repo.text(p)
        lines = doc.text.splitlines(keepends=True)
        for item in obj.get("addons") or []:
            if not isinstance(item, dict) or "version" not in item:
                continue
            have, want = str(item.get("version")), FACTS["addon_minimums"].get(str(item.get("name")))
            if isinstance(want, dict):
                want = want.get(".".join(have.lstrip("v").split(".")[:2]))
            if want is None or not re.match(r"v?\d+\.\d+\.\d+", have) or _addon_key(have) >= _addon_key(want):
                continue
            ln, col = item.lc.value("version")
            at = doc.start + sum(len(x) for x in lines[:ln]) + col
            m = re.match(r'"[^"]*"|\'[^\']*\'|[^\s#]+', text[at:])
            quote = m.group(0)[0] if m.group(0)[0] in "\"'" else ""
            self.edit(TextEdit(p, at, at + m.end(), f"{quote}{want}{quote}", RULE))
            self.res.notes.append(f"add-on {item.get('name')} {have} -> {want}")
            self.res.eksctl_addons = True
            _find(self.res, "MIG-AUTO-012", "info", p, hclsrc.line_of(text, at),
                  f"EKS add-on {item.get('name')} {have} is older than Auto Mode needs: raised to {want} (eksctl "
                  f"update addon -f {p})")
