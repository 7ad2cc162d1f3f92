"""WCAG 2.2 AA as axe-core measures it, in real headless Chromium: every page of the inventory, for
each role that opens it, at 390 and 1400 px, has no serious or critical violation. The counts per
page, role and width (all four impacts) go to test-artifacts/a11y/axe-<role>-<width>.json and are
printed (pytest -s); test-artifacts/a11y/axe-counts.md gathers them."""

from __future__ import annotations

import json

import pytest
from django.urls import get_resolver, reverse

from tests.a11y.axe import axe_run, counts, describe
from tests.a11y.inventory import NOT_PAGES, PAGES, ROLES, SIGNED_OUT, CROWD
from tests.conftest import REPO, log_in
from tests.page_settle import settle
from tests.ui.conftest import WIDTHS, shot

ARTIFACTS = REPO / "test-artifacts" / "a11y"


def _url_names(resolver=None, ns: str = "") -> set[str]:
    resolver = resolver or get_resolver()
    names = set()
    for p in resolver.url_patterns:
        if hasattr(p, "url_patterns"):
            if (p.namespace or "") in ("admin",) or str(p.pattern).startswith("api/"):
                continue  # Django's own admin and the REST API are not our pages
            names |= _url_names(p, f"{ns}{p.namespace}:" if p.namespace else ns)
        elif p.name:
            names.add(ns + p.name)
    return names - {"schema", "api-docs"}


def test_the_inventory_names_every_page_of_the_url_confs():
    listed = {p.name for p in PAGES} | set(NOT_PAGES)
    missing = _url_names() - listed
    assert not missing, f"URL names neither in tests/a11y/inventory.py PAGES nor in NOT_PAGES: {sorted(missing)}"
    assert not listed - _url_names(), "inventory names that no URL conf has"
    assert {r for p in PAGES for r in p.roles} == set(ROLES)


def record(role: str, width: int, rows: list[dict]) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    (ARTIFACTS / f"axe-{role}-{width}.json").write_text(json.dumps(rows, indent=1))
    for row in rows:
        c = row["counts"]
        print(f"axe {role:10} {width:4} {row['page']:40} critical {c['critical']} serious {c['serious']} "
              f"moderate {c['moderate']} minor {c['minor']}")
    table = ["| page | role | width | critical | serious | moderate | minor |", "|---|---|---|---|---|---|---|"]
    for path in sorted(ARTIFACTS.glob("axe-*-*.json")):
        _, who, px = path.stem.rsplit("-", 2)
        for row in json.loads(path.read_text()):
            c = row["counts"]
            table.append(f"| {row['page']} | {who} | {px} | {c['critical']} | {c['serious']} | {c['moderate']} | "
                         f"{c['minor']} |")
    (ARTIFACTS / "axe-counts.md").write_text("\n".join(table) + "\n")


def check(page, path: str, title: str, rows: list, failures: list, *, shot_name: str) -> None:
    violations = axe_run(page)
    rows.append({"page": title, "path": path, "counts": counts(violations),
                 "violations": [{"id": v["id"], "impact": v["impact"], "nodes": len(v["nodes"])} for v in violations]})
    failures.extend(f"{title}: {d}" for d in describe(violations))
    shot(page, f"a11y-{shot_name}", full_page=False)




@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("role", ROLES)
def test_no_serious_or_critical_violation(page_at, live_server, site, role, width):
    page = page_at(width)
    if role not in (SIGNED_OUT, CROWD):
        log_in(page, live_server, site["users"][role])
    rows, failures = [], []
    for spec in (p for p in PAGES if role in p.roles):
        path = reverse(spec.name, kwargs=spec.kwargs(site)) + (f"?{spec.query}" if spec.query else "")
        response = page.goto(live_server.url + path)
        if response.status != spec.status:
            failures.append(f"{spec.title}: status {response.status}, expected {spec.status}")
        page.wait_for_selector(spec.ready)
        settle(page)
        check(page, path, spec.title, rows, failures, shot_name=f"{role}-{width}-{spec.title.replace(' ', '_')}")
    record(role, width, rows)
    assert rows, "no page checked"
    assert not failures, "\n".join(failures)
