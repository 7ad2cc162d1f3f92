"""Whether a study's ratings changed, from the counts the database's triggers keep (RatingChanges).

Every statement that inserts, updates or deletes ratings, or inserts, updates or deletes assignments
that are (or were) submitted, adds its row count to the block of each assignment it touched, in the
writer's own transaction (migration 0018). A block's sum only grows and moves when its change
commits, so:
- a study whose sum is the same as at an earlier read has had no change committed since;
- a block whose sum is the same as when its rows were read, with the sum read *before* the rows,
  still holds those rows (a change committed between the two reads only makes the next check stricter).
The check reads a few rows per block instead of every rating of the study.

Each server process adds to its own row of a block (its pid), so writers never wait for each other.
Rows pile up as processes come and go; past FOLD_ABOVE rows a reader folds them into one row per block
(stripe -1) in one statement, which keeps every sum and skips rows a writer holds locked.
"""

from __future__ import annotations

from django.db import connection

from annotation.models import RatingChanges, Study

CHANGE_BLOCK_BITS = 16  # a block is assignment id >> 16, as the triggers of migration 0018 write it
CHANGE_BLOCK_IDS = 1 << CHANGE_BLOCK_BITS
FOLD_ABOVE = 2048  # rows of one study; a read then costs about a millisecond
FOLDED = -1  # the stripe of folded rows (pids are positive)

_T = RatingChanges._meta.db_table

_FOLD_SQL = f"""
    WITH gone AS (
        DELETE FROM {_T} WHERE (study_id, block, stripe) IN (
            SELECT study_id, block, stripe FROM {_T} WHERE study_id = %(study)s AND stripe <> {FOLDED}
            FOR UPDATE SKIP LOCKED)
        RETURNING block, changes)
    INSERT INTO {_T} AS c (study_id, block, stripe, changes)
    SELECT %(study)s, block, {FOLDED}, sum(changes) FROM gone GROUP BY block
    ON CONFLICT (study_id, block, stripe) DO UPDATE SET changes = c.changes + EXCLUDED.changes
"""


def block_changes(study: Study) -> dict[int, int]:
    """block (assignment id >> CHANGE_BLOCK_BITS) -> its changes so far, for every block ever changed."""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT block, sum(changes), count(*) FROM {_T} WHERE study_id = %s GROUP BY block",
                       [study.pk])
        rows = cursor.fetchall()
        # Not inside a caller's transaction: the fold's row locks would last as long as it does.
        if sum(n for _, _, n in rows) > FOLD_ABOVE and not connection.in_atomic_block:
            cursor.execute(_FOLD_SQL, {"study": study.pk})
    return {int(b): int(total) for b, total, _ in rows}


def study_changes(study: Study) -> int:
    """The study's changes to ratings and submitted assignments so far (0 if none since migration 0018)."""
    return sum(block_changes(study).values())
