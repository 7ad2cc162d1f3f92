"""Studies at ten times the size, written by PostgreSQL itself (INSERT ... SELECT generate_series):
no Python object, no COPY line per rating, so 10M ratings take minutes, not an hour.

    report_study(n_items)            # n_items x 1 output x 4 raters x 5 Likert criteria (20 ratings an item)
    arena_study(n_judgements)        # 200 systems, battles of two outputs, 10 votes each (pairwise)

Both are deterministic for a seed (setseed) and shaped as the app stores them: submitted assignments
with their permutation, ratings keyed by criterion; a pairwise answer is {"shown": [ids], "winner":
id | "tie", "strength": null} (docs/rubric-format.md, "Comparative questions").
"""

from __future__ import annotations

import contextlib

import numpy as np

N_RATERS, N_CRITERIA = 4, 5
ARENA_SYSTEMS, ARENA_VOTES, ARENA_RATERS = 200, 10, 100  # votes per battle (one per rater)
ARENA_TIES = 0.1


def _tables():
    from annotation.models import Assignment, Item, Output, Rating

    return tuple(m._meta.db_table for m in (Item, Output, Assignment, Rating))


def _raters(prefix: str, n: int) -> list[int]:
    from django.contrib.auth import get_user_model

    User = get_user_model()
    return [u.pk for u in User.objects.bulk_create([User(username=f"{prefix}-{r}", password="!") for r in range(n)])]


@contextlib.contextmanager
def _no_row_checks(cursor):
    """Foreign keys checked per row cost most of the writing (two lookups a rating, queued to the end
    of the statement); the rows here are consistent by construction, so the bench writes them as a
    replica would, without the checks (the server's superuser, as the bench databases are made)."""
    cursor.execute("SET session_replication_role = replica")
    try:
        yield
    finally:
        cursor.execute("RESET session_replication_role")


def _rubric_version(data: dict):
    from rubrics.services import rubric_version_create

    return rubric_version_create(data=data)[0]


def report_rubric() -> dict:
    from rubrics.loader import load_preset

    base = load_preset("feedback-000")
    crit = [c for c in base["criteria"] if c["kind"] == "likert" and not c.get("overall")][:N_CRITERIA]
    return {"slug": "bench-x10-report", "name": "Bench: five 1-5 criteria", "description": "bench",
            "instructions": "bench", "criteria": crit}


def report_study(n_items: int, seed: float = 0.25):
    """n_items items of one output rated by N_RATERS raters on N_CRITERIA 1-5 criteria; 0.5% of the
    assignments ignored (no ratings); scores share an item effect per criterion, so agreement is moderate."""
    from django.db import connection

    from annotation.services.studies import study_create

    rubric = report_rubric()
    study = study_create(name=f"bench x10 report {n_items}", rubric_version=_rubric_version(rubric),
                         raters_per_item=N_RATERS)
    keys = [c["key"] for c in rubric["criteria"]]
    raters = _raters(f"x10-report-{study.pk}", N_RATERS)
    items, outputs, assignments, ratings = _tables()
    with connection.cursor() as cursor, _no_row_checks(cursor):
        cursor.execute("SELECT setseed(%s)", [seed])
        cursor.execute(
            f"INSERT INTO {items} (study_id, external_id, context, context_kind, metadata, gold, is_attention_check,"
            " created_at) SELECT %s, 'item-' || g, 'Student essay ' || g || ': the argument is clear, the evidence"
            " thin.', 'text', '{}', '{}', false, now() FROM generate_series(0, %s - 1) g", [study.pk, n_items])
        cursor.execute(
            f"INSERT INTO {outputs} (item_id, position, system, content, kind, metadata)"
            f" SELECT id, 0, 'model-' || chr(97 + substr(external_id, 6)::int %% 4), 'Feedback: strong thesis;"
            f" add sources.', 'text', '{{}}' FROM {items} WHERE study_id = %s", [study.pk])
        cursor.execute(
            f"INSERT INTO {assignments} (study_id, item_id, rater_id, status, permutation, slot, is_attention_check,"
            " draft, ignored, ignore_reason, comment, time_on_task_ms, created_at, submitted_at)"
            " SELECT %s, i.id, (%s::bigint[])[r + 1], 'submitted', '[0]', r, false, '{}',"
            " (n * 4 + r) %% 200 = 7, CASE WHEN (n * 4 + r) %% 200 = 7 THEN 'Unsuitable text' ELSE '' END,"
            " CASE WHEN n %% 50 = 0 THEN 'typo in the essay' ELSE '' END, 20000 + floor(random() * 70000)::int,"
            " now(), now()"
            f" FROM (SELECT id, substr(external_id, 6)::int AS n FROM {items} WHERE study_id = %s) i,"
            f" generate_series(0, {N_RATERS - 1}) r ORDER BY i.id, r", [study.pk, raters, study.pk])
        cursor.execute(f"ANALYZE {items}; ANALYZE {outputs}; ANALYZE {assignments}")  # a plan for the join below
        # score = clip(round(3 + item effect + rater noise), 1, 5); the item effect is a fixed
        # function of (item, criterion), spread over [-1.5, 1.5]. The noise is drawn in the select list
        # of a subquery: in a LATERAL subquery keyed by (item, criterion), PostgreSQL's Memoize node
        # reused one draw for every rater of an item below some size (alpha 1.0 at 300k ratings).
        cursor.execute(
            f"INSERT INTO {ratings} (assignment_id, output_id, criterion, value, score, reasoning, created_at,"
            " updated_at)"
            " SELECT s.aid, s.oid, s.key, to_jsonb(s.v), s.v, CASE WHEN s.c = 1 THEN 'clear \"why\", with a comma'"
            " ELSE '' END, now(), now()"
            " FROM (SELECT a.id AS aid, o.id AS oid, k.key, k.c, greatest(1, least(5, round(3 + ((a.item_id"
            " * 2654435761 + k.c * 97) %% 1000) / 1000.0 * 3 - 1.5 + (random() - 0.5) * 2.4)))::int AS v"
            f" FROM {assignments} a JOIN {outputs} o ON o.item_id = a.item_id AND o.position = 0,"
            " unnest(%s::text[]) WITH ORDINALITY AS k(key, c)"
            " WHERE a.study_id = %s AND NOT a.ignored) s ORDER BY s.aid, s.key",
            [keys, study.pk])
        cursor.execute(f"ANALYZE {items}; ANALYZE {outputs}; ANALYZE {assignments}; ANALYZE {ratings}")
    return study


def arena_rubric() -> dict:
    return {"slug": "bench-x10-arena", "name": "Bench: arena battles", "description": "bench", "instructions": "bench",
            "criteria": [{"key": "preference", "name": "Better answer", "kind": "pairwise", "ties": True}]}


def arena_strengths(seed: int = 0) -> np.ndarray:
    """The planted log-strengths of the arena's systems (arena-like spread: about 1.5 logits sd)."""
    return np.random.default_rng(seed).normal(0, 1.5, ARENA_SYSTEMS)


def arena_system(k: int) -> str:
    return f"system-{k:03d}"


def arena_study(n_judgements: int, seed: float = 0.5):
    """Battles of two outputs from two different systems of ARENA_SYSTEMS, each judged by
    ARENA_VOTES raters (both orders, alternately); the first shown wins with the Bradley–Terry
    chance of the planted strengths (plus a small first-shown bias), ties ARENA_TIES of the time."""
    from annotation.services.studies import study_create

    study = study_create(name=f"bench x10 arena {n_judgements}", rubric_version=_rubric_version(arena_rubric()),
                         raters_per_item=ARENA_VOTES)
    _raters(f"x10-arena-{study.pk}", ARENA_RATERS)
    arena_battles_add(study, n_judgements, seed=seed)
    return study


def arena_battles_add(study, n_judgements: int, seed: float = 0.5) -> None:
    """`n_judgements` more judgements on new battles (items after the study's last), as an arena
    that grows between two reports."""
    from django.contrib.auth import get_user_model
    from django.db import connection

    first = study.items.count()
    n_items = -(-n_judgements // ARENA_VOTES)
    raters = list(get_user_model().objects.filter(username__startswith=f"x10-arena-{study.pk}-")
                  .order_by("id").values_list("id", flat=True))
    strengths = arena_strengths().tolist()
    items, outputs, assignments, ratings = _tables()
    new_items = f"(SELECT id, substr(external_id, 6)::int AS n FROM {items} WHERE study_id = %s) i"
    with connection.cursor() as cursor, _no_row_checks(cursor):
        cursor.execute("SELECT setseed(%s)", [seed])
        cursor.execute(
            f"INSERT INTO {items} (study_id, external_id, context, context_kind, metadata, gold, is_attention_check,"
            " created_at) SELECT %s, 'item-' || g, 'Prompt ' || g, 'text', '{}', '{}', false, now()"
            " FROM generate_series(%s, %s - 1) g", [study.pk, first, first + n_items])
        # Position 0: system (n * 37) mod S; position 1: a different one, (first + 1 + n mod (S - 1)) mod S.
        s = ARENA_SYSTEMS
        cursor.execute(
            f"INSERT INTO {outputs} (item_id, position, system, content, kind, metadata)"
            f" SELECT i.id, p, 'system-' || lpad((CASE WHEN p = 0 THEN (i.n * 37) %% {s}"
            f" ELSE ((i.n * 37) %% {s} + 1 + i.n %% {s - 1}) %% {s} END)::text, 3, '0'), 'Answer', 'text', '{{}}'"
            f" FROM {new_items}, generate_series(0, 1) p WHERE i.n >= %s", [study.pk, first])
        cursor.execute(
            f"INSERT INTO {assignments} (study_id, item_id, rater_id, status, permutation, slot, is_attention_check,"
            " draft, ignored, ignore_reason, comment, time_on_task_ms, created_at, submitted_at)"
            f" SELECT %s, i.id, (%s::bigint[])[1 + (i.n + r * {ARENA_VOTES}) %% {ARENA_RATERS}], 'submitted',"
            " CASE WHEN r %% 2 = 0 THEN '[0, 1]' ELSE '[1, 0]' END::jsonb, r, false, '{}', false, '', '',"
            " 15000, now(), now()"
            f" FROM {new_items}, generate_series(0, {ARENA_VOTES - 1}) r"
            f" WHERE i.n >= %s AND (i.n - %s) * {ARENA_VOTES} + r < %s ORDER BY i.id, r",
            [study.pk, raters, study.pk, first, first, n_judgements])
        cursor.execute(f"ANALYZE {items}; ANALYZE {outputs}; ANALYZE {assignments}")  # a plan for the join below
        cursor.execute(
            f"INSERT INTO {ratings} (assignment_id, output_id, criterion, value, score, reasoning, created_at,"
            " updated_at)"
            " SELECT a.id, NULL, 'preference', jsonb_build_object('shown', jsonb_build_array(f.id, s.id), 'winner',"
            " CASE WHEN u.tie < %s THEN to_jsonb('tie'::text) WHEN u.coin < 1 / (1 + exp(t2 - t1 - 0.1))"
            " THEN to_jsonb(f.id) ELSE to_jsonb(s.id) END, 'strength', NULL), NULL, '', now(), now()"
            f" FROM {assignments} a"
            f" JOIN {outputs} f ON f.item_id = a.item_id AND f.position = (a.permutation ->> 0)::int"
            f" JOIN {outputs} s ON s.item_id = a.item_id AND s.position = (a.permutation ->> 1)::int,"
            " LATERAL (SELECT (%s::float8[])[substr(f.system, 8)::int + 1] AS t1,"
            " (%s::float8[])[substr(s.system, 8)::int + 1] AS t2, random() AS tie, random() AS coin) u"
            f" WHERE a.study_id = %s AND a.item_id IN (SELECT i.id FROM {new_items} WHERE i.n >= %s) ORDER BY a.id",
            [ARENA_TIES, strengths, strengths, study.pk, study.pk, first])
        cursor.execute(f"ANALYZE {items}; ANALYZE {outputs}; ANALYZE {assignments}; ANALYZE {ratings}")


def judge_run_done(study, seed: float = 0.75):
    """A finished judge run over every output of a `report_study` on each of its criteria, written by
    PostgreSQL: the judge's score follows the item effect the raters share (plus its own noise), and
    each answer carries a G-Eval-style distribution over the five points, so every part of the
    report's judge sections (calibration, PPI++, verbosity, win rates) has numbers to work on."""
    from django.db import connection
    from django.utils import timezone

    from judges.models import JudgeRun, JudgeScore

    keys = [c["key"] for c in study.rubric["criteria"]]
    n_outputs = study.items.count()
    run = JudgeRun.objects.create(
        study=study, config={"name": "bench judge", "method": "geval", "model": "bench-judge-7b"},
        criteria=keys, status=JudgeRun.Status.DONE, n_outputs=n_outputs, n_expected=n_outputs * len(keys),
        n_scored=n_outputs * len(keys), started_at=timezone.now(), finished_at=timezone.now())
    items, outputs, _, _ = _tables()
    with connection.cursor() as cursor, _no_row_checks(cursor):
        cursor.execute("SELECT setseed(%s)", [seed])
        cursor.execute(
            f"INSERT INTO {JudgeScore._meta.db_table} (run_id, item_id, output_id, criterion, value, score, status,"
            " raw_text, reasoning, tokens_in, tokens_out, cost_usd, doubt, detail, created_at)"
            " SELECT %s, s.item_id, s.oid, s.key, to_jsonb(s.v), s.v, 'scored', 'Score: ' || s.v, '', 420, 6,"
            " 0.000432, '{}', jsonb_build_object('distribution', jsonb_build_object(s.v::text, 0.7,"
            " (CASE WHEN s.v < 5 THEN s.v + 1 ELSE s.v - 1 END)::text, 0.3)), now()"
            " FROM (SELECT o.item_id, o.id AS oid, k.key, greatest(1, least(5, round(3 + ((o.item_id"
            " * 2654435761 + k.c * 97) %% 1000) / 1000.0 * 3 - 1.5 + (random() - 0.5) * 1.6)))::int AS v"
            f" FROM {outputs} o JOIN {items} i ON i.id = o.item_id, unnest(%s::text[]) WITH ORDINALITY AS k(key, c)"
            " WHERE i.study_id = %s) s",
            [run.pk, keys, study.pk])
        cursor.execute(f"ANALYZE {JudgeScore._meta.db_table}")
    return run
