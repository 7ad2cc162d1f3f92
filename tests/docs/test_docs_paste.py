"""Every fenced block of docs/ that a reader may paste is checked for what it is for, as Concord reads it:
a phases block through the phases validator, a rubric through the rubric loader, a judge through the
judge loader, items through the items importer, JSON parsed, TOML parsed, Python compiled, shell (and the
`$ ` commands of a console block) through `bash -n`. A block that is deliberately a fragment says so on
the line before it: `<!-- partial: why -->`. A YAML or JSON block no check knows fails here, so a new kind
of example gets its check (or its reason) when it is written."""

from __future__ import annotations

import json
import re
import subprocess
import tomllib
from functools import cache

import pytest

from tests.conftest import REPO
from tests.docs.blocks import Block, page_blocks

PASTED = {"yaml", "yml", "json", "jsonl", "toml", "python", "py", "bash", "sh", "shell", "console", "csv"}


def blocks() -> list[Block]:
    return [b for page in sorted((REPO / "docs").rglob("*.md")) for b in page_blocks(page, REPO)
            if b.lang in PASTED and not b.partial]


@cache
def _criteria_keys() -> set[str]:
    """The criterion keys of the built-in rubrics: an example item's gold must name one of them."""
    from rubrics.loader import list_presets, load_preset

    return {c["key"] for slug in list_presets() for c in load_preset(slug)["criteria"]}


def _items(text: str, fmt: str) -> str:
    from annotation.importers import parse_items

    return f"{len(parse_items(text, fmt=fmt, criteria_keys=_criteria_keys()))} items"


def _yaml(code: str) -> str:
    """What the YAML is for, by its keys, and that it passes that check."""
    from annotation.questionnaires import SCHEMA, phases_parse
    from judges.config import parse_judges_text
    from rubrics.loader import load_rubric_text
    from rubrics.yaml_bounded import yaml_load

    data = yaml_load(code)
    assert isinstance(data, dict), "a YAML example is a mapping"
    if set(data) <= set(SCHEMA["properties"]):
        return f"phases {sorted(phases_parse(code))}"
    if {"slug", "criteria"} <= set(data):
        return f"rubric {load_rubric_text(code, filename='example.yaml')['slug']}"
    if "provider" in data or "judges" in data:
        return f"judge {[j['name'] for j in parse_judges_text(code)]}"
    raise AssertionError(f"no check knows this YAML (keys {sorted(data)}): add one here, or mark the block "
                         "<!-- partial: why -->")


def _console(code: str) -> str:
    """The commands of a console block: each `$ ` line, its continuation lines and its here-document."""
    commands, more, heredoc = [], False, None
    for line in code.splitlines():
        if heredoc is not None:
            commands.append(line)
            heredoc = None if line.strip() == heredoc else heredoc
        elif more or line.startswith("$ "):
            command = line if more else line[2:]
            commands.append(command)
            more = command.rstrip().endswith("\\")
            if opened := re.search(r"<<-?\s*['\"]?(\w+)['\"]?", command):
                heredoc = opened.group(1)
    return "\n".join(commands) + "\n"


def _bash(code: str) -> str:
    done = subprocess.run(["bash", "-n"], input=code, capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, f"bash -n: {done.stderr.strip()}"
    return "shell"


def check(block: Block) -> str:
    """What the block was checked as; AssertionError or the loader's own error when it is refused."""
    code, lang = block.code, block.lang
    if lang in ("yaml", "yml"):
        return _yaml(code)
    if lang == "json":
        data = json.loads(code)
        if isinstance(data, dict) and "outputs" in data:  # an item, as one line of an items file
            return _items(json.dumps(data) + "\n", "jsonl")
        return "json"
    if lang == "jsonl":
        return _items(code, "jsonl")
    if lang == "csv":
        assert code.startswith("id,"), "a CSV example is an items file (id,context,...)"
        return _items(code, "csv")
    if lang == "toml":
        tomllib.loads(code)
        return "toml"
    if lang in ("python", "py"):
        compile(code, block.where, "exec")
        return "python"
    if lang == "console":
        assert code.lstrip().startswith("$ "), "a console block starts with a `$ ` command"
        return _bash(_console(code))
    return _bash(code)


BLOCKS = blocks()


@pytest.mark.parametrize("block", BLOCKS, ids=lambda b: b.where)
def test_a_pasted_block_is_what_it_is_for(block):
    check(block)


def test_every_kind_of_example_is_checked():
    """The phases of the crowd tutorial and the phases page, a rubric, a judge, items: each has its check,
    and what is left out as a fragment says why."""
    checked = {b.where: check(b) for b in BLOCKS}
    kinds = {what.split()[0] for what in checked.values()}
    assert {"phases", "rubric", "judge", "python", "shell"} <= kinds, kinds
    assert any(w.startswith("docs/tutorials/crowd-study.md") and what.startswith("phases")
               for w, what in checked.items())
    assert any(w.startswith("docs/participant-phases.md") and what.startswith("phases")
               for w, what in checked.items())
    partial = [b for page in sorted((REPO / "docs").rglob("*.md")) for b in page_blocks(page, REPO) if b.partial]
    assert all(len(b.partial) > 10 for b in partial)
    print(f"{len(checked)} pasteable blocks checked, {len(partial)} marked partial:", sorted(set(checked.values())))


def test_the_checks_refuse_what_the_docs_once_had():
    """The phases example as it was (an unquoted `?` in a flow mapping, yes/no read as booleans) is refused."""
    from annotation.questionnaires import PhasesError, phases_parse

    broken = ("pre_questionnaire:\n  questions:\n"
              "    - {key: native_english, text: Is English your first language?, kind: single, options: [yes, no]}\n")
    with pytest.raises(PhasesError, match="not valid YAML"):
        phases_parse(broken)
    quoted_only = broken.replace("Is English your first language?", '"Is English your first language?"')
    with pytest.raises(PhasesError, match="options"):  # [true, false]
        _yaml(quoted_only)
    assert _yaml(quoted_only.replace("[yes, no]", '["yes", "no"]')) == "phases ['pre_questionnaire']"
    with pytest.raises(AssertionError, match="bash -n"):
        _bash("if true; then echo\n")
    assert _console("$ cat > .env <<'ENV'\nA=1\nENV\n$ echo \\\n  done\nprinted output\n") == (
        "cat > .env <<'ENV'\nA=1\nENV\necho \\\n  done\n")
