"""Studies for export tests: the RRGen study of tests/reports and a code-generation study
whose per-output overall scores are known by construction."""

from __future__ import annotations

import pytest

from tests.conftest import make_user
from tests.reports.conftest import raters, rated_study  # noqa: F401  (fixtures)
from tests.reports.factories import items_jsonl, submit

CODEGEN_SYSTEMS = ("m1", "m2", "m3", "m4")
# (technical, aesthetic) per rater for item 0; overall = mean of the two groups (weights 0.5/0.5)
ITEM0 = {
    "m1": [(5, 4), (5, 4)],   # overall 4.5
    "m2": [(4, 4), (4, 4)],   # 4.0
    "m3": [(4, 4), (4, 3)],   # 3.75 (raters 4.0 and 3.5)
    "m4": [(2, 2), (2, 2)],   # 2.0
}


@pytest.fixture
def codegen_study(make_study, researcher):
    """Item 0 as ITEM0; item 1: every output 3/3 (all ties); item 2: an attention check."""
    graders = [make_user("g0"), make_user("g1")]
    study = make_study("codegen-002", annotators=graders, researchers=[researcher],
                       items_text=items_jsonl(3, systems=CODEGEN_SYSTEMS, prefix="ch", attention={2}))
    items = list(study.items.order_by("id"))
    for r, grader in enumerate(graders):
        values = {}
        for p, system in enumerate(CODEGEN_SYSTEMS):
            tech, aes = ITEM0[system][r]
            values[(p, "technical_quality")] = tech
            values[(p, "aesthetic_quality")] = aes
        submit(study, grader, items[0], values, permutation=[3, 2, 1, 0] if r else [0, 1, 2, 3])
        submit(study, grader, items[1], {(p, k): 3 for p in range(4) for k in ("technical_quality",
                                                                             "aesthetic_quality")})
        submit(study, grader, items[2], {(p, k): 5 for p in range(4) for k in ("technical_quality",
                                                                             "aesthetic_quality")})
    return study
