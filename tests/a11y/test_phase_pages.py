"""The participant phases, each state a crowd participant meets on the workspace page (consent, the
questionnaires with and without errors, the instructions with the attention policy and a failed
comprehension check, training failed with and without a retry, screened out, completion), checked with
axe-core at 390 and 1400 px: no serious or critical violation. Counts: test-artifacts/a11y/axe-phases-<width>.json
(and axe-counts.md)."""

from __future__ import annotations

import pytest

from tests.a11y.axe import axe_run, counts, describe
from tests.a11y.phase_flow import phases_study_and_link, walk_phases
from tests.a11y.test_axe import record
from tests.page_settle import settle
from tests.ui.conftest import WIDTHS, page_at, shot  # noqa: F401 (page_at: a fixture)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.mark.parametrize("width", WIDTHS)
def test_every_phase_state_has_no_serious_or_critical_violation(page_at, live_server, make_study, admin_user,
                                                                width):
    study, link = phases_study_and_link(make_study, admin_user)
    page = page_at(width)
    rows, failures = [], []

    def visit(name: str) -> None:
        settle(page)
        violations = axe_run(page)
        rows.append({"page": f"phase: {name}", "path": page.url.removeprefix(live_server.url),
                     "counts": counts(violations),
                     "violations": [{"id": v["id"], "impact": v["impact"], "nodes": len(v["nodes"])}
                                    for v in violations]})
        failures.extend(f"{name}: {d}" for d in describe(violations))
        shot(page, f"a11y-phases-{width}-{name.replace(' ', '_').replace(',', '')}")

    walk_phases(page, live_server.url, study, link, visit, tag=f"w{width}")
    record("phases", width, rows)
    assert len(rows) == 12, [r["page"] for r in rows]
    assert not failures, "\n".join(failures)
