"""The settings reference (docs/reference/settings.md) is generated from the code's reads of the
environment (config/env_reference.py): a variable read but not described, described but no longer read,
or a page that no longer matches the code fails here."""

from __future__ import annotations

import ast

from config.env_reference import MEANINGS, PAGE, reads, settings_page, variables_read


def test_every_variable_the_code_reads_is_described_and_nothing_else():
    read = set(variables_read())
    assert read - set(MEANINGS) == set(), "read but not described in config/env_reference.py MEANINGS"
    assert set(MEANINGS) - read == set(), "described but no longer read anywhere"


def test_the_checked_in_page_is_the_generated_one():
    assert PAGE.read_text() == settings_page(), (
        "docs/reference/settings.md is stale: run `.venv/bin/python -m config.env_reference`")


def test_the_variables_the_old_page_lacked_are_there_with_their_defaults():
    found = variables_read()
    page = PAGE.read_text()
    for name, default in {"TRUSTED_PROXY_COUNT": "0", "CONN_MAX_AGE": "60", "AXES_FAILURE_LIMIT": "10",
                          "LOG_LEVEL": "'INFO'", "AXES_COOLOFF_MINUTES": "15",
                          "SECURE_HSTS_SECONDS": "31536000 if SESSION_COOKIE_SECURE else 0",
                          "DATABASE_DISABLE_SERVER_SIDE_CURSORS": "False"}.items():
        assert found[name].default == default, name
        assert f"| `{name}` |" in page, name
    assert found["TRUSTED_PROXY_COUNT"].kind == "int"
    assert found["CONCORD_DEMO_JUDGE_PORT"].read_in == ["config/launcher.py", "judges/simulation.py"]


def test_every_way_of_reading_the_environment_is_found():
    source = """
import os
a = env.int("A_INT", default=3)
b = env("B_PLAIN")
c = os.environ.get("C_GET", "x")
d = os.environ["D_ITEM"]
e = os.getenv("E_GETENV")
os.environ.setdefault("F_SET", "1")   # a write, not a read
os.environ["G_WRITE"] = "1"           # a write
name = "H"; os.environ.get(name)      # not a literal name
"""
    got = {name: (ast.unparse(default) if default is not None else None, kind)
           for name, default, kind in reads(ast.parse(source))}
    assert got == {"A_INT": ("3", "int"), "B_PLAIN": (None, "str"), "C_GET": ("'x'", "str"),
                   "D_ITEM": (None, "str"), "E_GETENV": (None, "str")}
