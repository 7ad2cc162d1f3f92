"""The runnable blocks of a documentation page, as docs/tutorials and docs/how-to mark them (each page's
opening comment): ```bash, ```sh and ```python blocks are steps, run in order; ```console, ```text, ```yaml
and the rest are shown only; a block right after a `<!-- skip-test: why -->` line is shown only too.
Every block a reader may paste (YAML, JSON, TOML, shell, Python, items) is also checked for what it is
for (test_docs_paste.py) unless the line before it is `<!-- partial: why -->` (deliberately a fragment)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

RUN = {"bash": "shell", "sh": "shell", "python": "python"}
FENCE = re.compile(r"^(?P<indent> *)(?P<fence>`{3,}|~{3,})\s*(?P<lang>[\w+-]*)")
SKIP = re.compile(r"^\s*<!--\s*skip-test:\s*(?P<why>.+?)\s*-->\s*$")
PARTIAL = re.compile(r"^\s*<!--\s*partial:\s*(?P<why>.+?)\s*-->\s*$")


@dataclass(frozen=True)
class Block:
    page: str
    line: int  # where the opening fence is, 1-based
    lang: str
    code: str
    skip: str = ""  # why it is shown only, from its skip-test comment
    partial: str = ""  # why it is a fragment, not pasted whole, from its partial comment

    @property
    def kind(self) -> str | None:
        """"shell" or "python" for a step; None for a block that is shown only."""
        return None if self.skip else RUN.get(self.lang)

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"


def page_blocks(path: Path, root: Path) -> list[Block]:
    """Every fenced block of a Markdown page, in order (MkDocs' fences: ``` or ~~~, indented or not)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    name = str(path.relative_to(root))
    blocks, i, previous = [], 0, ""
    while i < len(lines):
        opened = FENCE.match(lines[i])
        if not opened:
            if lines[i].strip():
                previous = lines[i]
            i += 1
            continue
        indent, fence = len(opened["indent"]), opened["fence"]
        body, j = [], i + 1
        while j < len(lines) and not lines[j].strip().startswith(fence):
            body.append(lines[j][indent:] if lines[j][:indent].strip() == "" else lines[j].lstrip())
            j += 1
        skipped, partial = SKIP.match(previous), PARTIAL.match(previous)
        blocks.append(Block(name, i + 1, opened["lang"].lower(), "\n".join(body) + "\n",
                            skipped["why"] if skipped else "", partial["why"] if partial else ""))
        previous, i = "", j + 1
    return blocks
