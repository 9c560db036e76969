"""mkdocs-gen-files script: one page per finding code (what SARIF help links point to) and an index of them,
generated from the finding catalogue (migrator/knowledge/findings.yaml) at build time."""
from __future__ import annotations

import mkdocs_gen_files

from migrator import knowledge
from migrator.explain import markdown

catalogue = knowledge.load("findings")
index = ["# Finding codes", "", "Every code migrator can report; `migrator explain CODE` prints the same.", "",
         "| code | severity | meaning |", "|---|---|---|"]
for code, f in catalogue.items():
    index.append(f"| [{code}](rules/{code}.md) | {f['severity']} | {f['title']} |")
    with mkdocs_gen_files.open(f"rules/{code}.md", "w") as fh:     # the same text `migrator explain CODE` prints
        fh.write(markdown(code) + "\nSee the [rule overview](../rules.md) for the mappings behind it.\n")
with mkdocs_gen_files.open("codes.md", "w") as fh:
    fh.write("\n".join(index) + "\n")
