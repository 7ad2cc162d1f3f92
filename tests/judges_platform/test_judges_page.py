"""Issue 25 §2: the Judges page groups judges by the study they ran on, in compact rows, with money
shown as money (not "$0.44999999999999996 / $1.7999999999999998")."""

from __future__ import annotations

import pytest

from judges.models import JudgeRun
from judges.services.runs import judge_config_snapshot
from judges.templatetags.money import usd

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("value,shown", [
    (0.15 * 3, "$0.45"), (0.6 * 3, "$1.80"), (0, "$0"), (1234.5, "$1,234.50"), (0.000149999, "$0.00015"),
    (0.0000123, "$1.2e-05"), (-2.5, "−$2.50"), (None, ""), ("x", ""), (float("nan"), ""),
])
def test_usd(value, shown):
    assert usd(value) == shown


def _run(study, judge, cost):
    return JudgeRun.objects.create(study=study, judge=judge, config=judge_config_snapshot(judge), criteria=[],
                                   status="done", cost_usd=cost)


def test_judges_are_grouped_by_study_with_money_as_money(make_study, make_judge, client_for, admin_user,
                                                          annotator, researcher):
    first = make_study("rrgen-001", items_text=None)
    second = make_study("aqua-003")
    cheap = make_judge("cheap", price_in_per_m=0.15 * 3, price_out_per_m=0.6 * 3)
    other = make_judge("other")
    make_judge("idle")
    _run(first, cheap, 0.1 + 0.2)
    _run(first, cheap, 0.0004)
    _run(first, other, 1.5)
    _run(second, cheap, 0.25)
    for user in (annotator, researcher):
        assert client_for(user).get("/judges/").status_code in (403, 404)
    html = client_for(admin_user).get("/judges/").content.decode()
    assert "0.4499999" not in html and "1.799999" not in html and "0.30000000000000004" not in html
    assert "$0.45 / $1.80" in html
    blocks = html.split('class="card study-judges"')[1:]
    assert len(blocks) == 3
    # newest study first, each with only the judges that ran on it; then the judges never run
    assert second.name in blocks[0] and "cheap" in blocks[0] and "other" not in blocks[0]
    assert first.name in blocks[1] and "cheap" in blocks[1] and "other" in blocks[1] and "idle" not in blocks[1]
    assert "Not run on any study yet" in blocks[2] and "idle" in blocks[2] and "cheap" not in blocks[2]
    # per study: runs and total cost of each judge, the study's total in its heading
    assert "$1.80 spent" in blocks[1]  # 0.3 + 0.0004 + 1.5
    cheap_row = blocks[1][blocks[1].index(">cheap"):]
    assert '<td class="num">2</td>' in cheap_row[:cheap_row.index("</tr>")]
    assert "$0.30" in cheap_row[:cheap_row.index("</tr>")]
