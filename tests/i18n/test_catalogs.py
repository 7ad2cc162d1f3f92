"""The German catalogs are complete and the committed .mo files are compiled from the .po files as
they stand (the .mo is committed so that nothing needs GNU gettext to run Concord)."""

from __future__ import annotations

import gettext
import json
import re

import pytest

from tests.conftest import REPO

LOCALE = REPO / "locale" / "de" / "LC_MESSAGES"


def po_entries(path) -> list[dict]:
    """msgid, msgstr and flags of each entry of a .po file (the header skipped)."""
    entries = []
    for block in path.read_text(encoding="utf-8").split("\n\n"):
        lines = [line for line in block.strip().split("\n") if line]
        flags = " ".join(line for line in lines if line.startswith("#,"))
        fields, current = {}, None
        for line in lines:
            m = re.match(r'^(msgid|msgstr) (".*")$', line)
            if m:
                current = m.group(1)
                fields[current] = json.loads(m.group(2))
            elif line.startswith('"') and current:
                fields[current] += json.loads(line)
        if fields.get("msgid"):
            entries.append({"msgid": fields["msgid"], "msgstr": fields.get("msgstr", ""), "flags": flags})
    return entries


@pytest.mark.parametrize("domain", ["django", "djangojs"])
def test_every_message_is_translated_and_compiled(domain):
    entries = po_entries(LOCALE / f"{domain}.po")
    assert len(entries) > (150 if domain == "django" else 20)
    untranslated = [e["msgid"] for e in entries if not e["msgstr"].strip()]
    fuzzy = [e["msgid"] for e in entries if "fuzzy" in e["flags"]]
    assert not untranslated and not fuzzy, (untranslated, fuzzy)
    with (LOCALE / f"{domain}.mo").open("rb") as f:
        compiled = gettext.GNUTranslations(f)
    stale = [e["msgid"] for e in entries if compiled.gettext(e["msgid"]) != e["msgstr"]]
    assert not stale, f"{domain}.mo is older than {domain}.po for: {stale[:5]} (run msgfmt or compilemessages)"


@pytest.mark.parametrize("domain", ["django", "djangojs"])
def test_placeholders_survive_translation(domain):
    for e in po_entries(LOCALE / f"{domain}.po"):
        assert sorted(re.findall(r"%(?:\(\w+\))?s", e["msgid"])) == sorted(re.findall(r"%(?:\(\w+\))?s", e["msgstr"])), e
