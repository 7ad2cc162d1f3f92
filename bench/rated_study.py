"""A rated study of any size, generated inside PostgreSQL (INSERT ... SELECT generate_series).

Writing 10 million ratings from Python, even with COPY, costs minutes of one core on tuples;
here PostgreSQL makes every row itself. The shape is bench_exports.make_study's: items of one
output, N raters who each rated every item on the rubric's Likert criteria, 0.5% of the
assignments ignored (no ratings), a comment on one item in 50, and a reasoning that needs CSV
quoting on the first criterion. Scores are an item effect plus rater noise, rounded to 1..5,
drawn from hashes of the ids (deterministic, no Python random state), so agreement is real.
"""

from __future__ import annotations

from django.db import connection

# A uniform in (0, 1) and a standard normal (Box–Muller) from hashes of integers: the same data
# at every run and in any plan (no dependence on the order PostgreSQL produces rows).
_UNIFORM = "((hashint8({x})::float8 + 2147483648.5) / 4294967297.0)"


def _normal(seed: str) -> str:
    """A standard normal drawn from the integer expression `seed` (Box–Muller on two hashes)."""
    a, b = f"({seed}) * 2", f"({seed}) * 2 + 1"
    return f"(sqrt(-2 * ln({_UNIFORM.format(x=a)})) * cos(2 * pi() * {_UNIFORM.format(x=b)}))"


def fill_rated_study(study, raters: list, criteria: list[str], n_items: int) -> None:
    """Items item-000000.., one output each, and every rater's submitted assignment and ratings."""
    from annotation.models import Assignment, Item, Output, Rating

    i_t, o_t, a_t, r_t = (m._meta.db_table for m in (Item, Output, Assignment, Rating))
    n_raters = len(raters)
    with connection.cursor() as cursor:
        cursor.execute("SET jit = off")
        # Foreign keys hold by construction (every id is selected from its table): skip the per-row
        # checks, a third of the insert's time (needs a superuser, as the bench databases have).
        cursor.execute("SET session_replication_role = replica")
        cursor.execute(
            f"INSERT INTO {i_t} (study_id, external_id, context, context_kind, metadata, gold, is_attention_check,"
            " is_training, explanation, slots_taken, priority, created_at)"
            " SELECT %s, 'item-' || lpad(g::text, 6, '0'),"
            " 'Student essay ' || g || ': the argument is clear but the evidence is thin.',"
            " 'text', '{}', '{}', false, false, '', %s, 0, now() FROM generate_series(0, %s - 1) g ORDER BY g",
            [study.pk, n_raters, n_items])
        cursor.execute(f"ANALYZE {i_t}")  # each step joins the last one's rows: plan it with their count
        cursor.execute(
            f"INSERT INTO {o_t} (item_id, position, system, content, kind, metadata)"
            " SELECT i.id, 0, 'model-' || substr('abcd', (substr(i.external_id, 6)::int %% 4) + 1, 1),"
            " 'Feedback ' || substr(i.external_id, 6)::int || ': strong thesis; add sources.', 'text', '{}'"
            f" FROM {i_t} i WHERE i.study_id = %s ORDER BY i.id", [study.pk])
        cursor.execute(f"ANALYZE {o_t}")
        # k: the item's place in upload order; (k * raters + r) % 200 == 7 marks 0.5% ignored.
        cursor.execute(
            f"INSERT INTO {a_t} (study_id, item_id, rater_id, status, permutation, slot, is_attention_check, draft,"
            " ignored, ignore_reason, comment, time_on_task_ms, created_at, submitted_at)"
            " SELECT %s, i.id, u.rater_id, 'submitted', '[0]', u.r1 - 1, false, '{}', ign, CASE WHEN ign THEN"
            " 'Unsuitable text' ELSE '' END, CASE WHEN k %% 50 = 0 THEN 'typo in the essay' ELSE '' END,"
            f" 20000 + floor(70000 * {_UNIFORM.format(x='i.id * 16 + u.r1')})::bigint, now(), now()"
            f" FROM (SELECT id, substr(external_id, 6)::int AS k FROM {i_t} WHERE study_id = %s) i"
            " CROSS JOIN unnest(%s::bigint[]) WITH ORDINALITY AS u(rater_id, r1)"
            " CROSS JOIN LATERAL (SELECT (i.k * %s + u.r1 - 1) %% 200 = 7 AS ign) f"
            " ORDER BY i.id, u.r1",
            [study.pk, study.pk, [r.pk for r in raters], n_raters])
        cursor.execute(f"ANALYZE {a_t}")
        # An item effect per criterion (mean 3, sd 1) plus each rater's noise (sd 0.8).
        truth = "3 + " + _normal("a.item_id * 64 + ck.c")
        noise = "0.8 * " + _normal("a.id * 64 + ck.c + 1000000007")
        cursor.execute(
            f"INSERT INTO {r_t} (assignment_id, output_id, criterion, value, score, reasoning, created_at, updated_at)"
            " SELECT a_id, o_id, key, to_jsonb(s), s, CASE WHEN c = 1 THEN 'clear \"why\", with a comma' ELSE ''"
            " END, now(), now() FROM ("
            f"  SELECT a.id AS a_id, o.id AS o_id, ck.key, ck.c,"
            f"   least(5, greatest(1, round({truth} + {noise})))::int AS s"
            f"  FROM {a_t} a JOIN {o_t} o ON o.item_id = a.item_id AND o.position = 0"
            "   CROSS JOIN unnest(%s::text[]) WITH ORDINALITY AS ck(key, c)"
            "   WHERE a.study_id = %s AND NOT a.ignored ORDER BY a.id, ck.key) x",
            [criteria, study.pk])
        cursor.execute("RESET session_replication_role")
        cursor.execute("RESET jit")
        cursor.execute(f"ANALYZE {r_t}")


def fill_items(study, raters: list, n_items: int, n_outputs: int = 3) -> None:
    """n_items items item-0000000.. of n_outputs outputs (systems model-a, -b, ...), and the items
    page's mix of states: every 10th item rated by each of `raters`, every 1000th of those flagged as
    unsuitable by its first rater, every 100th open on a rater's screen."""
    from annotation.models import Assignment, Item, Output

    i_t, o_t, a_t = (m._meta.db_table for m in (Item, Output, Assignment))
    words = ["clean", "slow", "friendly", "noisy", "spacious", "dated", "central", "quiet", "pricey", "cosy"]
    with connection.cursor() as cursor:
        cursor.execute("SET jit = off")
        cursor.execute("SET session_replication_role = replica")  # ids come from their tables: no FK checks
        cursor.execute(
            f"INSERT INTO {i_t} (study_id, external_id, context, context_kind, metadata, gold, is_attention_check,"
            " is_training, explanation, slots_taken, priority, created_at)"
            " SELECT %s, 'item-' || lpad(g::text, 7, '0'), 'Review ' || g || ': the room was '"
            " || (%s::text[])[1 + g %% 10] || ' and the staff were ' || (%s::text[])[1 + (g / 10) %% 10]"
            " || ' at the front desk (' || md5(g::text) || ').',"
            " 'text', '{}', '{}', false, false, '', CASE WHEN g %% 10 = 0 THEN %s ELSE 0 END, 0, now()"
            " FROM generate_series(0, %s - 1) g ORDER BY g",
            [study.pk, words, words, len(raters), n_items])
        cursor.execute(f"ANALYZE {i_t}")
        cursor.execute(
            f"INSERT INTO {o_t} (item_id, position, system, content, kind, metadata)"
            " SELECT i.id, p, 'model-' || chr(97 + p), 'Response ' || p || ' to review '"
            " || substr(i.external_id, 6)::int || '. Thank you for staying with us.', 'text', '{}'"
            f" FROM {i_t} i CROSS JOIN generate_series(0, %s - 1) p WHERE i.study_id = %s ORDER BY i.id, p",
            [n_outputs, study.pk])
        cursor.execute(f"ANALYZE {o_t}")
        cursor.execute(
            f"INSERT INTO {a_t} (study_id, item_id, rater_id, status, permutation, slot, is_attention_check, draft,"
            " ignored, ignore_reason, comment, time_on_task_ms, created_at, submitted_at)"
            " SELECT %s, i.id, u.rater_id, CASE WHEN k %% 100 = 0 AND u.r = 1 THEN 'active' ELSE 'submitted' END,"
            " '[0, 1, 2]', u.r - 1, false, '{}', k %% 10000 = 0 AND u.r = 1, '', '', 30000, now(), now()"
            f" FROM (SELECT id, substr(external_id, 6)::int AS k FROM {i_t} WHERE study_id = %s) i"
            " CROSS JOIN unnest(%s::bigint[]) WITH ORDINALITY AS u(rater_id, r)"
            " WHERE i.k %% 10 = 0 ORDER BY i.id, u.r",
            [study.pk, study.pk, [r.pk for r in raters]])
        cursor.execute("RESET session_replication_role")
        cursor.execute("RESET jit")
        for table in (i_t, o_t, a_t):
            cursor.execute(f"ANALYZE {table}")
