"""mkdocs-gen-files script: one page per finding code (what SARIF help links point to) and an index of them,
generated from the finding catalogue (migrator/knowledge/findings.yaml) at build time."""
from __future__ import annotations

import mkdocs_gen_files

from migrator import knowledge

catalogue = knowledge.load("findings")
index = ["# Finding codes", "", "Every code migrator can report; `migrator explain CODE` prints the same.", "",
         "| code | severity | meaning |", "|---|---|---|"]
for code, f in catalogue.items():
    index.append(f"| [{code}](rules/{code}.md) | {f['severity']} | {f['title']} |")
    with mkdocs_gen_files.open(f"rules/{code}.md", "w") as fh:
        kind = ("a change migrator makes (informational)" if f["severity"] == "info" else
                "something to decide or do by hand" if f["severity"] == "warning" else
                "something migrator cannot do safely: nothing is written for it")
        fh.write(f"# {code}\n\n**{f['title']}**\n\nSeverity: `{f['severity']}`: {kind}. The finding's message names "
                 "the file, the line and, where there is one, the manual step.\n\n"
                 f"Suppress it in a file with `# migrator: ignore[{code}] <reason>` on the line or the line above, "
                 f"or with `--ignore {code}`.\n\nSee the [rule overview](../rules.md) for the mappings behind it.\n")
with mkdocs_gen_files.open("codes.md", "w") as fh:
    fh.write("\n".join(index) + "\n")
