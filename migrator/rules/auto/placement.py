"""Where the Auto Mode hop writes its twins: the v1beta1 hop's placement (rules/v1beta1/objects/placement.py) with this
hop's rule name and names (`<name>-auto-mode` files, `<label>_auto_mode` blocks and templates), and a copied block's
`depends_on` naming the new objects instead of the old ones, never Karpenter's controller (both go later)."""
from __future__ import annotations

from ...edits import TextEdit
from ...tfgraph import relink
from ..v1beta1.manifests import ManifestsRule
from .convert import FACTS

RULE = "auto/nodepools"
NAMING = FACTS["naming"]


class AutoPlacement(ManifestsRule):
    """The v1beta1 hop's placement, writing this hop's objects with this hop's names. A copied block's depends_on
    names the new objects instead of the old ones and never Karpenter's controller (both go later)."""
    rule = RULE
    renamed: dict = {}
    dropped: set = set()
    unused_template_variables_go = True

    def place_hcl(self, m, c, more=()) -> None:
        n = len(self.res.edits)
        super().place_hcl(m, c, more)
        for i in range(n, len(self.res.edits)):
            e = self.res.edits[i]
            if isinstance(e, TextEdit) and "depends_on" in e.text:
                self.res.edits[i] = TextEdit(e.path, e.start, e.end, relink(e.text, self.renamed, self.dropped),
                                             e.rule, order=e.order)

    def file_stem(self, stem: str, kinds: list[str]) -> str:
        return stem + NAMING["file_suffix"]

    def spare_stem(self, stem: str) -> str | None:
        return None

    def block_label(self, label: str, kind: str, old_kind: str) -> str:
        return label + NAMING["tf_label_suffix"]

    def template_base(self, tbase: str, kind: str, old_kind: str) -> str:
        stem, ext = tbase.split(".", 1) if "." in tbase else (tbase, "")
        return stem + NAMING["file_suffix"] + ("." + ext if ext else "")
