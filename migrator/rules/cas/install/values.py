"""The karpenter chart's values for installs outside Terraform: the cluster and queue by name, the controller pinned to
the node group that stays (labelled where its EKS name is generated), its IRSA role by ARN in the account the
repository states."""
from __future__ import annotations

import posixpath
import re

from ....cas import NodeGroup, _block_file, yaml_values
from ....edits import TextEdit, line_end, line_start, to_newline
from ....sources import hcl as hclsrc
from .. import convert
from .clusters import _group_name_literal
from .common import INSTALL, RULE, _find


class ChartValues:
    """The karpenter chart's values for installs outside Terraform: the cluster, queue, the controller's node group and
    IAM role."""

    def chart_values(self, kept, cluster: str, names: dict[str, str], annotate: bool = True) -> dict:
        match = [{"key": "karpenter.sh/nodepool", "operator": "DoesNotExist"}]
        group = _group_name_literal(kept.group) if kept is not None else None
        pin = self.controller_label(kept.group) if kept is not None and not group else None
        if group:
            match.append({"key": convert.GROUP_LABEL, "operator": "In", "values": [group]})
        elif pin is not None:
            match.append({"key": pin[0], "operator": "In", "values": [pin[1]]})
        elif kept is not None:
            _find(self.res, "MIG-CAS-019", "warning", kept.group.path, kept.group.line,
                  f"node group {kept.group.name}'s EKS name is not a literal, so the controller is only kept off "
                  "Karpenter's nodes, not pinned to the group",
                  f"add {convert.GROUP_LABEL} In [<the group's name>] to the karpenter chart values' affinity")
        out = {"settings": {"clusterName": cluster, "interruptionQueue": names["queue"]},
               "serviceAccount": {"name": INSTALL["service_account"]},
               "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                   "nodeSelectorTerms": [{"matchExpressions": match}]}}}}
        if self.res.identity == "irsa" and annotate:
            arn = self.controller_role_arn(names["controller_role"])
            if arn is not None:
                out["serviceAccount"]["annotations"] = {INSTALL["irsa_annotation"]: arn}
        if convert.tolerations(kept):
            out["tolerations"] = convert.tolerations(kept)
        return out

    def controller_label(self, g: NodeGroup) -> tuple[str, str] | None:
        """The label that pins the controller to a kept group whose EKS name is generated (knowledge/cas.yaml
        `install.controller_label`): the group's own when it has it, else added to the group's `labels` - a
        terraform-aws-modules group entry or an aws_eks_node_group of the Terraform folder Karpenter's IAM is written
        in, whose labels are a map written out (or none yet); None where it cannot be added."""
        key, value = INSTALL["controller_label"]["key"], INSTALL["controller_label"]["value"]
        labels = g.literal("labels")
        if isinstance(labels, dict) and str(labels.get(key)) == value:
            return key, value
        if g.source not in ("module", "resource") or g.flavour != "managed" or g.block is None or g.instance or \
                (g.source == "module" and (g.entry is None or g.entry.value.kind != "object")):
            return None
        where = _block_file(self.repo, g.block) or g.path
        if (posixpath.dirname(where) or ".") != (self.res.file.rsplit("/", 1)[0] if "/" in self.res.file else "."):
            return None                         # another root module's group: its apply is not this runbook's
        path = g.path if g.source == "module" else where
        text, nl = self.repo.text(path), self.repo.files[path].newline
        if (path, g.name) in getattr(self, "_labelled", set()):
            return key, value
        entries = {x.key: x for x in g.entry.value.entries} if g.source == "module" else None
        have = entries.get("labels") if entries is not None else g.block.attributes.get("labels")
        have = have.value if isinstance(have, hclsrc.ObjEntry) else have.expr if have is not None else None
        line = f'"{key}" = "{value}"'
        if have is not None:
            if have.kind != "object" or (have.entries and hclsrc.line_of(text, have.entries[0].start)
                                         == hclsrc.line_of(text, have.start)):
                return None                     # an expression, or a map on one line: not edited
            if have.entries:
                first = have.entries[0]
                ls = line_start(text, first.start)
                edit = TextEdit(path, ls, ls, to_newline(f"{text[ls:first.start]}{line}\n", nl), RULE)
            else:
                ind = re.match(r"[ \t]*", text[line_start(text, have.start):]).group(0)
                edit = TextEdit(path, have.start, have.end, to_newline(f"{{\n{ind}  {line}\n{ind}}}", nl), RULE)
        else:
            if "labels" in g.fields and not isinstance(labels, dict):
                return None                     # labels from the module's defaults, written as an expression
            inherited = labels or {}            # the defaults' labels: a group's own map replaces them, so it keeps them
            container = g.entry.value if g.source == "module" else None
            last = (container.entries[-1] if container is not None and container.entries else
                    max(g.block.attributes.values(), key=lambda a: a.end) if g.source == "resource" and
                    g.block.attributes else None)
            if last is None or (container is not None and hclsrc.line_of(text, container.start) ==
                                hclsrc.line_of(text, container.end)):
                return None
            ind = text[line_start(text, last.start):last.start]
            pos = line_end(text, last.end)
            kept = "".join(f"{ind}  {hclsrc.object_key(str(k))} = {hclsrc.quote(str(v))}\n"
                           for k, v in inherited.items())
            edit = TextEdit(path, pos, pos, to_newline(f"\n{ind}labels = {{\n{kept}{ind}  {line}\n{ind}}}\n", nl),
                            RULE, order=1)
        self.res.edits.append(edit)
        self.__dict__.setdefault("_labelled", set()).add((path, g.name))
        self.res.labelled.append((posixpath.dirname(where) or ".", g.block.address))
        _find(self.res, "MIG-CAS-067", "info", g.path, g.line,
              f"node group {g.name}'s EKS name is generated, so chart values outside Terraform cannot name it: it is "
              f"labelled {key}={value} and the controller is pinned to that label (the label reaches its running "
              "nodes in place when Terraform applies the group: a node group configuration update)")
        return key, value

    def controller_role_arn(self, name: str) -> str | None:
        """The ARN of the controller's IRSA role (the karpenter module names it `name`) for chart values a GitOps tool
        applies: the account and partition are those of Cluster Autoscaler's own role ARN in its values (the same
        cluster's account); else said (MIG-CAS-056) and left out - never guessed."""
        account = self.account()
        if account is not None:
            return INSTALL["role_arn"].format(partition=account[0], account=account[1], name=name)
        cas0 = self.cas.installs[0]
        _find(self.res, "MIG-CAS-056", "warning", cas0.path, cas0.line,
              "the controller runs with IRSA and its chart values are applied outside Terraform, which cannot read the "
              f"role's ARN; the repository states no AWS account (Cluster Autoscaler's values name no role ARN), so the "
              f"karpenter chart values carry no {INSTALL['irsa_annotation']} annotation: the controller would start "
              "without AWS credentials",
              f"add serviceAccount.annotations {INSTALL['irsa_annotation']}: arn:aws:iam::<account>:role/{name} to "
              "the karpenter chart values (the output iam_role_arn of module.karpenter) before the charts sync")
        return None

    def account(self) -> tuple[str, str] | None:
        """(partition, account) of Cluster Autoscaler's own IRSA role ARN in its chart values (the cluster's account),
        else of the one account the cluster's AWS provider allows; None when neither states it."""
        for i in self.cas.installs:
            v = (((yaml_values(i).get("rbac") or {}).get("serviceAccount") or {}).get("annotations") or {}).get(
                INSTALL["irsa_annotation"]) if i.obj is not None else None
            m = re.fullmatch(INSTALL["role_arn_pattern"], str(v or ""))
            if m:
                return m.group("partition"), m.group("account")
        # else the one account the cluster's AWS provider allows (`allowed_account_ids`), in its region's partition
        from ....inventory.sites import static_value
        d = self.terraform_dir(self.cas.installs[0]) if self.cas.installs else "."
        for p, b in self.repo.blocks_in(d, "provider", "aws"):
            if b.attr("alias") is not None:
                continue
            ids = static_value(self.repo, posixpath.dirname(p), b.attr("allowed_account_ids"))
            region = static_value(self.repo, posixpath.dirname(p), b.attr("region"))
            if isinstance(ids, list) and len(ids) == 1 and re.fullmatch(r"\d{12}", str(ids[0])) and \
                    isinstance(region, str):
                part = next(v for k, v in INSTALL["region_partitions"].items() if region.startswith(k))
                return part, str(ids[0])
        return None
