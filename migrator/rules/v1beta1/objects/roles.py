"""The node role (or instance profile) each new EC2NodeClass names: the AWSNodeTemplate's instance profile resolved to
its role, the chart's default profile, the tags the cluster gives its nodes; said where none can be told."""
from __future__ import annotations

from typing import Any

from ruamel.yaml.comments import CommentedMap

from ....inventory import Manifest
from ....resolve import Resolution, resolve_node_role
from ....sources import hcl as hclsrc
from ..convert import Converted, convert_nodeclass, needs_role

from .common import FACTS, _name_key, _reorder_spec


class NodeRoles:
    """The node role (or instance profile) each new EC2NodeClass names: from the AWSNodeTemplate's profile, the chart's
    default, the tags the cluster gives."""

    def role(self) -> Resolution:
        if self._role is None:
            if self.opts.node_role:
                self._role = Resolution(literal=self.opts.node_role, trail=["--node-role"])
            else:
                self._role, self._role_value = resolve_node_role(self.repo, self.values, self.owns)
        return self._role

    def global_tags(self, m: Manifest, conv: Converted) -> Converted:
        """Chart value settings.aws.tags (dropped in v0.33) merged into the EC2NodeClass's own tags."""
        prefix = tuple(FACTS["global_tags_key"].split("."))
        tags = [v for v in self.values if v.keys[: len(prefix)] == prefix and len(v.keys) == len(prefix) + 1]
        if not tags or conv.obj is None:
            return conv
        spec = conv.obj["spec"]
        own = spec.get("tags")
        merged = CommentedMap(own) if isinstance(own, dict) else CommentedMap()
        added = []
        for v in tags:
            key = v.keys[-1]
            if key in merged:
                continue
            if v.expression is None:
                merged[key] = v.value
            elif m.container in ("kubectl_manifest", "kubernetes_manifest"):
                merged[key] = m.expression_token(v.expression)
            else:
                self.finding("MIG-NC-015", "warning", m.path, m.line,
                             f"global tag {key} ({v.path}:{v.line}) is the Terraform expression {v.expression}, "
                             f"which cannot be written into {m.path}",
                             f"add tag {key} to the EC2NodeClass by hand before the cleanup phase removes "
                             "settings.aws.tags")
                continue
            added.append(f"{key} ({v.path}:{v.line})")
        if added:
            spec["tags"] = merged
            if own is None:
                conv.obj["spec"] = _reorder_spec(spec)
            self.finding("MIG-NC-016", "info", m.path, m.line,
                         f"global chart tags merged into EC2NodeClass {_name_key(m, conv.name)}: {', '.join(added)}")
        return conv

    def with_role(self, m: Manifest, conv: Converted, spec_path: tuple) -> Converted:
        """Re-run the EC2NodeClass conversion with the node role resolved for this container."""
        src = self.nodeclass_source(m, conv.name, spec_path)
        if not needs_role(src):
            return conv
        if any(n.severity == "error" for n in conv.notes):
            return conv
        role = self.role_for(m)
        profile = self.profile_for(m) if role is None and (not self.role().ok or self.profile_literal()) else None
        if role is None and profile is None:
            if not self.role().ok:
                self.role_unresolved(m)
            return conv
        again = convert_nodeclass(src, inline=spec_path != ("spec",), role=role, instance_profile=profile)
        again.moves = conv.moves if spec_path != ("spec",) else again.moves
        again.notes = conv.notes
        return again

    @staticmethod
    def nodeclass_source(m: Manifest, name: Any, spec_path: tuple) -> Any:
        """What convert_nodeclass reads for `m`: the AWSNodeTemplate itself, or a Provisioner's inline provider
        (`spec_path`) wrapped as one named `name`."""
        if spec_path == ("spec",):
            return m.obj
        spec_src = m.obj
        for p in spec_path:
            spec_src = spec_src.get(p) if isinstance(spec_src, dict) else None
        return CommentedMap([("metadata", CommentedMap([("name", name)])), ("spec", spec_src)])

    def role_for(self, m: Manifest) -> Any:
        """Role value for the container of m: a literal, or a placeholder for a Terraform expression."""
        r = self.role()
        name = _name_key(m, m.obj.get("metadata", {}).get("name") if isinstance(m.obj, dict) else "")
        if not r.ok:
            return None
        trail = " -> ".join(r.trail)
        if m.container == "yaml" or (m.container == "template" and m.call is not None and m.call.name == "file"):
            literal = r.literal if r.literal is not None else self.literal_of(r.expression)
            if literal is not None and r.literal is None:
                self.finding("MIG-NC-013", "info", m.path, m.line,
                             f"role {literal!r} resolved: {trail} (the value {r.expression} has)")
                return literal
            if r.literal is None and self.profile_literal():
                return None             # the literal instance profile its nodes use is kept instead (MIG-NC-017)
            if r.literal is None:
                self.finding("MIG-NC-012", "error", m.path, m.line,
                             f"EC2NodeClass for {name} needs a literal role name in {m.path}, but the role is only "
                             f"known as the Terraform expression {r.expression} ({trail})",
                             f"re-run with --node-role <the value of {r.expression}>")
                return None
            self.finding("MIG-NC-013", "info", m.path, m.line, f"role {r.literal!r} resolved: {trail}")
            return r.literal
        if r.literal is not None and r.expression is None:
            self.finding("MIG-NC-013", "info", m.path, m.line, f"role {r.literal!r} resolved: {trail}")
            return r.literal
        expr = r.expression or hclsrc.quote(r.literal or "")
        # a template takes the role as its own variable (added to the templatefile() call), never the expression
        tok = m.expression_token(FACTS["naming"]["template_role_variable"] if m.container == "template" else expr)
        self.finding("MIG-NC-013", "info", m.tf_path or m.path, m.line, f"role {expr} resolved: {trail}")
        return tok

    def literal_of(self, expression: str | None) -> str | None:
        """The one literal a Terraform expression of the chart values' module has (a variable's default or its tfvars
        value, a local), for files that cannot hold an expression."""
        v = self._role_value
        if not expression or v is None or not v.path.endswith((".tf", ".tofu")):
            return None
        from ....resolve import definition_sites
        from ....sources.hcl import Expr
        sites, _ = definition_sites(self.repo, v.path, Expr("ref", 0, 0, expression.strip()))
        values = {s.value for s in sites}
        return values.pop() if len(values) == 1 else None

    def profile_literal(self) -> bool:
        v = self._role_value
        return v is not None and v.expression is None and v.value not in (None, "")

    def role_unresolved(self, m: Manifest) -> None:
        name = _name_key(m, m.obj.get("metadata", {}).get("name") if isinstance(m.obj, dict) else "")
        self.finding("MIG-NC-011", "error", m.path, m.line,
                     f"EC2NodeClass for {m.kind} {name} needs spec.role (the node IAM role name) or the instance "
                     f"profile its nodes use, and migrator can resolve neither: {self.role().reason}",
                     "re-run with --node-role <role name>, or add an aws_iam_instance_profile with a role for the "
                     "profile in settings.aws.defaultInstanceProfile, or set spec.instanceProfile on the "
                     "AWSNodeTemplate to keep using an unmanaged instance profile")

    def profile_for(self, m: Manifest) -> Any:
        """The instance profile the old nodes used (the chart's defaultInstanceProfile), when the role behind it
        cannot be resolved: the EC2NodeClass keeps it (spec.instanceProfile), so new nodes get the same identity."""
        v = self._role_value
        if v is None or v.value in (None, ""):
            return None
        name = _name_key(m, m.obj.get("metadata", {}).get("name") if isinstance(m.obj, dict) else "")
        how = (f"EC2NodeClass for {m.kind} {name}: spec.instanceProfile {v.expression or v.value} kept from "
               f"{v.key} ({v.path}:{v.line}), the profile its nodes use today, because the role behind it cannot "
               f"be resolved ({self.role().reason})")
        later = ("to move to spec.role later (Karpenter then manages the instance profiles, and the controller needs "
                 "the iam:*InstanceProfile permissions): replace spec.instanceProfile by spec.role = <the profile's "
                 "role name>; that change replaces the nodes")
        if v.expression is None:
            self.finding("MIG-NC-017", "info", m.path, m.line, how, later)
            return str(v.value)
        if m.container in ("yaml", "template"):
            return None         # a Terraform expression cannot be written into a plain file or another's template
        tok = m.expression_token(v.expression)
        self.finding("MIG-NC-017", "info", m.tf_path or m.path, m.line, how, later)
        return tok
