"""The demo's accounts and their passwords, without Django: `make run` prints them while the demo loads."""

from __future__ import annotations

import os

ANNOTATORS = ["annotator", "annotator2", "annotator3"]
ACCOUNTS = {"admin": "admin", **{name: "annotator" for name in ANNOTATORS}, "researcher": "researcher"}


def demo_password(username: str) -> str:
    return os.environ.get("CONCORD_DEMO_PASSWORD") or f"{username}-demo"


def demo_account_rows() -> list[tuple[str, str, str]]:
    """(username, password, role) for each demo account."""
    return [(name, demo_password(name), role) for name, role in ACCOUNTS.items()]
