"""`depends_on` and reads between the blocks a phase of the Auto Mode hop renames or removes (shared by its
nodepools and cleanup rules)."""
from __future__ import annotations

from ... import tfgraph
from ...model import Finding
from ...sources import hcl as hclsrc

def unlink(repo, addresses: dict, rule: str, edits: list, findings: list):
    """What else in their modules reads blocks that go: a `depends_on` entry is dropped, an output that reads them
    goes too (returned), anything else is an error (None: nothing may be removed)."""
    outputs, readers = tfgraph.unlink(repo, addresses, rule, edits)
    for a, (p, b, hits) in readers.items():
        findings.append(Finding("MIG-AUTO-041", "error", p, hclsrc.line_of(repo.text(p), b.start),
                                f"{a} reads {', '.join(hits)}, which this phase removes",
                                f"remove or rewrite {a}'s use of it, then run migrator again"))
    return None if readers else outputs
