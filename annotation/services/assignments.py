"""The assignment engine: which item a rater rates next, and in which order its responses are shown.

    assignment_next(study=study, rater=user) -> Assignment | None     # RaterPaused for a paused rater
    assignments_expire(study=study) -> int                             # abandoned leases back to the pool
    assignments_release(study=study, rater=None) -> int                # every active lease back, at once
    assignments_release_overdue(study=study) -> int                    # crowd participants past their time limit
    assignment_reclaim(assignment=a) -> bool                           # a late submit after expiry

Guarantees (tested under real concurrency on PostgreSQL):
- each item gets at most `raters_per_item` live (active or submitted) assignments: the engine locks the
  item row (FOR UPDATE SKIP LOCKED first, so raters rarely wait on each other) and takes the lowest
  free slot 0..raters_per_item-1 in the same statement that inserts the assignment; a partial unique
  index on (item, slot) makes the database refuse a second holder of a slot even if that were wrong;
- a rater never gets an item twice (unique (item, rater));
- one rater's calls are serialised by a row lock on their membership, so two tabs cannot take two items;
- assignments left active past `expires_at` (settings.ASSIGNMENT_TTL_SECONDS) go back to the pool;
- items come in an independent random order per rater; attention-check items are mixed in at the
  study's rate (never alone); response order is counterbalanced across an item's raters (Williams
  design) and random within each counterbalancing cell; the order is stored on the assignment (`permutation`).

`Item.slots_taken` is a hint that lets the candidate search use an index; it is corrected whenever
it is found wrong, so a stale hint costs a retry, never an over-assignment or a lost item.
"""

from __future__ import annotations

import hashlib
import json
import random
import time
import zlib
from datetime import datetime, timedelta

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Exists, OuterRef, Q
from django.utils import timezone

from annotation.db import prepared_cursor
from annotation.models import (
    Assignment, CrowdParticipant, Item, Output, Study, StudyMember, assignment_from_row, assignment_item_columns,
)
from annotation.services import comparative, sampling_policy
from annotation.services.training import training_next, training_state

ACTIVE = Assignment.Status.ACTIVE
SUBMITTED = Assignment.Status.SUBMITTED
EXPIRED = Assignment.Status.EXPIRED

# Each failed attempt finds one item full and corrects its hint, so attempts are progress; the bound
# only guards against a bug looping forever.
_PICK_ATTEMPTS = 100
# An item is open while it has fewer live slots than it wants: raters_per_item (the hard cap, the slots),
# or fewer under adaptive redundancy (Item.slots_wanted, set from its posterior after each rating;
# annotation.services.sampling_policy). Under the uniform design slots_wanted is null and want = rpi.
_CAP = "LEAST(%(rpi)s, COALESCE(i.slots_wanted, %(want)s))"


class RaterPaused(Exception):
    """The rater is paused in this study (by an admin or after failed attention checks)."""


# ---------------------------------------------------------------- response order (pure)


def williams_design(k: int) -> list[list[int]]:
    """Rows of a Williams design for k conditions: a Latin square (every condition once in every
    position per k rows) whose first-order carry-over is balanced too (every condition follows every
    other equally often). k rows when k is even, 2k (the square and its mirror) when k is odd.
    """
    if k <= 0:
        return [[]]
    if k == 1:
        return [[0]]
    # First row 0, 1, k-1, 2, k-2, ...; row r adds r to each entry (mod k).
    first, lo, hi = [0], 1, k - 1
    while len(first) < k:
        first.append(lo)
        lo += 1
        if len(first) < k:
            first.append(hi)
            hi -= 1
    rows = [[(c + r) % k for c in first] for r in range(k)]
    if k % 2:
        rows += [list(reversed(row)) for row in rows]
    return rows


def response_order(*, n_outputs: int, rotation: int | None, shuffle: bool, rng: random.Random | None = None) -> list[int]:
    """Indexes 0..n-1 in the order shown. A rotation index picks a Williams-design row
    (counterbalancing in a fixed order); otherwise shuffle at random, or keep the uploaded order."""
    if rotation is not None:
        rows = williams_design(n_outputs)
        return list(rows[rotation % len(rows)])
    order = list(range(n_outputs))
    if shuffle:
        (rng or random.SystemRandom()).shuffle(order)
    return order


def counterbalanced_order(*, n_outputs: int, slot: int, item_seed: int) -> list[int]:
    """The order shown to an item's `slot`-th rater: counterbalanced and random at once (seeds 001/002).

    An item's raters form cells of k = n_outputs consecutive slots. Each cell is one Latin square of
    a Williams design (for odd k the square and its mirror alternate between cells, so two cells
    complete the design), so over a full cell every output is shown once in every position. Within
    the cell the square's rows are dealt to the slots in a random order, and the outputs are
    relabelled by a random permutation per item: each rater's order alone is uniformly random.
    Deterministic in `item_seed`, so slots taken at different times (or retaken after an expired
    lease) still fit one design.
    """
    k = n_outputs
    if k <= 1:
        return list(range(k))
    rows = williams_design(k)
    cell, place = divmod(slot, k)
    square = rows[k:] if k % 2 and cell % 2 else rows[:k]
    relabel = list(range(k))
    random.Random(item_seed).shuffle(relabel)
    dealt = list(range(k))
    random.Random(f"{item_seed}/{cell}").shuffle(dealt)
    return [relabel[c] for c in square[dealt[place]]]


def _item_seed(study: Study, item_id: int) -> int:
    # Secret-keyed, so the order cannot be predicted from ids; stable, so every slot shares one design.
    digest = hashlib.sha256(f"{settings.SECRET_KEY}/order/{study.pk}/{item_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big")


def study_response_order(study: Study, *, item_id: int, slot: int, n_outputs: int,
                         item_seed: int | None = None) -> list[int]:
    """The shown order (indexes into the item's outputs by position) for one slot, by the study's
    settings: counterbalanced with random order within each cell (both on by default), counterbalanced
    in the fixed Williams order, shuffled, or as uploaded. A rubric with a pairwise or best_worst
    question shows a pair or a tuple from its balanced design instead (annotation.services.comparative).
    `item_seed` replaces the item's secret seed (a simulation that must give the same orders on every
    machine and database)."""
    kind, size = comparative.shown_design(study.rubric)
    seed = _item_seed(study, item_id) if item_seed is None else item_seed
    if kind == "pairwise":
        return comparative.pair_order(n_outputs, slot=slot, seed=seed)
    if kind == "best_worst":
        return comparative.tuple_order(n_outputs, size, slot=slot, seed=seed)
    if study.counterbalance and study.randomize_outputs:
        return counterbalanced_order(n_outputs=n_outputs, slot=slot, item_seed=seed)
    # Without randomisation the fixed rotation continues across items, so positions balance over the study.
    rotation = item_id * study.raters_per_item + slot if study.counterbalance else None
    return response_order(n_outputs=n_outputs, rotation=rotation, shuffle=study.randomize_outputs)


def attention_due(*, rate: float, n_assigned: int, n_attention: int, phase: float) -> bool:
    """Whether a rater's next item should be an attention check: keeps the rater's share of checks
    at `rate`, one every 1/rate items, starting at a per-rater phase in [0, 1) so that raters cannot
    learn a fixed position."""
    if rate <= 0:
        return False
    return int(rate * (n_assigned + 1) + phase) > n_attention


def _rater_phase(study_id: int, rater_id: int) -> float:
    digest = hashlib.sha256(f"attention/{study_id}/{rater_id}".encode()).digest()
    return int.from_bytes(digest[:4], "big") / 2**32


# ---------------------------------------------------------------- engine


def lease_duration(study: Study | None = None) -> timedelta:
    """How long a rater holds an item: the study's own expiry when it has one, else the site's."""
    if study is not None and study.assignment_expiry_minutes:
        return timedelta(minutes=study.assignment_expiry_minutes)
    return timedelta(seconds=settings.ASSIGNMENT_TTL_SECONDS)


def assignment_next(*, study: Study, rater) -> Assignment | None:
    """The rater's active assignment, else a newly assigned item; None when no work is left
    (or the study is not open). Raises RaterPaused for a paused rater. The assignment comes with
    its item loaded.

    Each attempt is one short transaction holding at most one item lock, so raters can wait for
    one another (never in a cycle) instead of being told "no work" while an item is merely locked.
    The common path is three statements: lock the rater; renew the lease of an item they hold or,
    holding none, lock a candidate item (one statement); insert the assignment into a free slot.
    """
    if study.status != Study.Status.OPEN:
        return None
    if study.training_pass_mark is not None:  # the training phase comes first (annotation.services.training)
        training = training_state(study, rater)
        if not training.qualified:
            with transaction.atomic():
                _lock_rater(study, rater)  # one call at a time per rater; a paused rater is refused here too
                return training_next(study=study, rater=rater) if training.in_progress else None
    _sweep_now_and_then(study)
    wait = swept = healed = False
    attention = study.attention_check_rate > 0
    for _ in range(_PICK_ATTEMPTS):
        with transaction.atomic():
            walk = _lock_rater(study, rater)
            if not attention and not wait:  # the common case: one statement asks for both
                active, picked = _own_active_or_pick(study, rater, walk)
                if active is not None:
                    return active
            else:
                if (active := _own_active(study, rater)) is not None:
                    return active
                if attention:
                    attention = False  # decided once per call
                    if _attention_is_due(study, rater) and _regular_work_left(study, rater):
                        if (assignment := _assign_attention_item(study, rater)) is not None:
                            return assignment
                picked = _pick_regular(study, rater, walk, wait=wait)
            if picked is not None:
                if (assignment := _insert_regular(study, rater, *picked)) is not None:
                    return assignment
                continue  # the item was full after all (its hint is corrected now): look again
        if not wait:
            wait = True  # every candidate was locked by raters being served right now: wait for them
        elif not swept:
            swept = True  # before saying "no work", return abandoned leases to the pool
            assignments_expire(study=study)
        elif not healed and recount_study(study):
            healed = True  # a hint was too high (rows changed outside the engine): look again
        else:
            return None
    return None


_last_sweep: dict[int, float] = {}


def _sweep_now_and_then(study: Study) -> None:
    """Expire abandoned leases at most every ASSIGNMENT_SWEEP_SECONDS per process and study (a lease
    lasts minutes; sweeping on every call would cost every call a query). A rater who finds no work
    sweeps at once anyway."""
    interval = getattr(settings, "ASSIGNMENT_SWEEP_SECONDS", 10)
    now = time.monotonic()
    if now - _last_sweep.get(study.pk, -1e9) >= interval:
        _last_sweep[study.pk] = now
        assignments_expire(study=study)
        assignments_release_overdue(study=study)


def _lock_rater(study: Study, rater) -> tuple[int | None, bool]:
    """Serialise one rater's own calls (two tabs) with a row lock on their membership, and refuse a
    paused or removed rater. Different raters never wait on it. Returns where the rater's walk
    stands (their pick cursor) and whether the study has routed items open (an index probe)."""
    routed = (f"EXISTS (SELECT 1 FROM {Item._meta.db_table} i WHERE i.study_id = %(study)s AND i.priority > 0"
              f" AND NOT i.is_attention_check AND i.slots_taken < {_CAP})")
    params = {"study": study.pk, "rater": rater.pk, "rpi": study.raters_per_item,
              "want": sampling_policy.items_wanted_default(study)}
    with prepared_cursor() as cursor:
        cursor.execute(
            f"SELECT paused OR removed_at IS NOT NULL, pick_cursor, {routed} FROM {StudyMember._meta.db_table}"
            " WHERE study_id = %(study)s AND user_id = %(rater)s FOR NO KEY UPDATE",
            params,
        )
        row = cursor.fetchone()
        if row is None:  # not a member (a service caller's business): still serialise
            key = zlib.crc32(f"concord-rater/{study.pk}/{rater.pk}".encode()) - 2**31
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [key])
            return None, True
    if row[0]:
        raise RaterPaused()
    return row[1], row[2]


_OWN_ACTIVE_SQL = f"""
    UPDATE {Assignment._meta.db_table} SET expires_at = %(expires)s
    WHERE study_id = %(study)s AND rater_id = %(rater)s AND status = 'active' RETURNING id
"""


def _own_active(study: Study, rater) -> Assignment | None:
    # Still held (nobody reclaimed it): keep it and give it a fresh lease.
    with prepared_cursor() as cursor:
        cursor.execute(_OWN_ACTIVE_SQL, {"expires": timezone.now() + lease_duration(study), "study": study.pk,
                                         "rater": rater.pk})
        ids = [row[0] for row in cursor.fetchall()]
    return Assignment.objects.with_item(id=min(ids)) if ids else None


def _own_active_or_pick(study: Study, rater, walk: tuple[int | None, bool]
                        ) -> tuple[Assignment | None, tuple[int, list[int], int] | None]:
    """_own_active, then (only if the rater holds nothing) the first part of _pick_regular's walk, in
    one statement: (the active assignment, None) or (None, what _pick_regular returns). Both run after
    the rater's lock, so its snapshot sees every assignment the rater's other calls committed."""
    params, parts, key = _pick_parts(study, rater, walk)
    where, order = parts[0]
    with prepared_cursor() as cursor:
        cursor.execute(
            f"""
            WITH own AS ({_OWN_ACTIVE_SQL}), pick AS (
                {_pick_sql(where, order, key, "FOR UPDATE OF i SKIP LOCKED",
                           also="NOT EXISTS (SELECT 1 FROM own)")}
            )
            SELECT (SELECT min(id) FROM own), pick.* FROM (SELECT 1) AS one LEFT JOIN pick ON true
            """,
            {**params, "expires": timezone.now() + lease_duration(study)},
        )
        own_id, item_id, positions, item_key = cursor.fetchone()
    if own_id is not None:
        return Assignment.objects.with_item(id=own_id), None
    if item_id is not None:
        return None, (item_id, list(positions), item_key)
    return None, _pick_regular(study, rater, walk, wait=False, parts_from=1)


def _assign_attention_item(study: Study, rater) -> Assignment | None:
    picked = _pick_attention(study, rater)
    if picked is None:
        return None
    item_id, positions = picked
    seen = Assignment.objects.filter(item_id=item_id).count()
    order = study_response_order(study, item_id=item_id, slot=seen, n_outputs=len(positions))
    fields = {"study": study, "status": ACTIVE, "slot": None, "permutation": [positions[i] for i in order],
              "is_attention_check": True, "expires_at": timezone.now() + lease_duration(study)}
    assignment, _ = Assignment.objects.get_or_create(item_id=item_id, rater=rater, defaults=fields)
    return Assignment.objects.with_item(id=assignment.pk)


_INSERT_SQL = f"""
    WITH free AS (
        SELECT s FROM generate_series(0, %(rpi)s - 1) AS s
        WHERE NOT EXISTS (SELECT 1 FROM {Assignment._meta.db_table} a
                          WHERE a.item_id = %(item)s AND a.slot = s AND a.status <> 'expired')
        ORDER BY s LIMIT 1
    ), ins AS (
        INSERT INTO {Assignment._meta.db_table} AS asg
            (study_id, token, item_id, rater_id, status, permutation, slot, is_attention_check, draft, ignored,
             ignore_reason, comment, time_on_task_ms, created_at, expires_at)
        SELECT %(study)s, gen_random_uuid(), %(item)s, %(rater)s, 'active', %(perms)s::jsonb -> free.s, free.s,
               false, '{{}}'::jsonb, false, '', '', 0, %(now)s, %(expires)s
        FROM free
        ON CONFLICT (item_id, rater_id) DO UPDATE
            SET status = 'active', slot = EXCLUDED.slot, expires_at = EXCLUDED.expires_at
            WHERE asg.status = 'expired'  -- only an abandoned row of this rater comes back, with its draft
        RETURNING asg.*
    ), hint AS (
        UPDATE {Item._meta.db_table} SET slots_taken = (
            SELECT count(*) FROM {Assignment._meta.db_table} a
            WHERE a.item_id = %(item)s AND a.slot IS NOT NULL AND a.status <> 'expired') + (SELECT count(*) FROM ins)
        WHERE id = %(item)s
    ), walked AS (
        UPDATE {StudyMember._meta.db_table} SET pick_cursor = %(key)s
        WHERE study_id = %(study)s AND user_id = %(rater)s AND EXISTS (SELECT 1 FROM ins)
    )
    SELECT {assignment_item_columns("ins", "i")} FROM ins JOIN {Item._meta.db_table} i ON i.id = ins.item_id
"""


def _insert_regular(study: Study, rater, item_id: int, positions: list[int], key: int) -> Assignment | None:
    """Take the lowest free slot of a locked item, in one statement (so it sees every assignment
    committed before the lock was granted), correct the item's hint and move the rater's cursor to
    the item's key; None when it is full."""
    rpi = study.raters_per_item
    perms = []  # one JSON array of each slot's order: a list of lists costs psycopg more to adapt
    sampled = None
    if sampling_policy.policy_name(study) == sampling_policy.ACTIVE_PAIRS and len(positions) >= 2:
        # the pair comes from the study's comparisons so far, whichever slot is free
        order, probability, how = sampling_policy.active_pair(study=study, item_id=item_id, positions=positions)
        perms, sampled = [[positions[i] for i in order]] * rpi, (probability, how)
    elif sampling_policy.policy_name(study) == sampling_policy.ACTIVE_INFERENCE:
        # the item's own draw probability, recorded with each of its ratings
        probability = Item.objects.filter(pk=item_id).values_list("sampling_probability", flat=True).first()
        sampled = (probability, "active") if probability is not None else None
    for slot in range(rpi if sampled is None or sampled[1] == "active" else 0):
        order = study_response_order(study, item_id=item_id, slot=slot, n_outputs=len(positions))
        perms.append([positions[i] for i in order])
    now = timezone.now()
    with prepared_cursor() as cursor:
        cursor.execute(_INSERT_SQL, {"rpi": rpi, "item": item_id, "study": study.pk, "rater": rater.pk,
                                     "perms": json.dumps(perms), "now": now, "expires": now + lease_duration(study),
                                     "key": key})
        row = cursor.fetchone()
    if row is None:
        return None
    assignment = assignment_from_row(row)
    if sampled is not None:
        assignment.sampling_probability, assignment.sampling = sampled
        Assignment.objects.filter(pk=assignment.pk).update(sampling_probability=sampled[0], sampling=sampled[1])
    return assignment


def assignments_expire(*, study: Study, now: datetime | None = None) -> int:
    """Send the study's abandoned active assignments back to the pool; returns how many.
    Rows being written right now are skipped (SKIP LOCKED); the next call picks them up."""
    now = now or timezone.now()
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            f"""
            WITH stale AS (
                SELECT id FROM {Assignment._meta.db_table}
                WHERE study_id = %s AND status = 'active' AND expires_at < %s
                FOR UPDATE SKIP LOCKED
            )
            UPDATE {Assignment._meta.db_table} a SET status = 'expired', slot = NULL
            FROM stale WHERE a.id = stale.id
            RETURNING a.item_id
            """,
            [study.pk, now],
        )
        item_ids = sorted({row[0] for row in cursor.fetchall()})
        if item_ids:
            recount_items(cursor, item_ids)
    return len(item_ids)


def assignments_release(*, study: Study, rater=None) -> int:
    """Send the study's active assignments (or one rater's) back to the pool at once, e.g. when the
    study closes or a rater is paused; drafts stay on the rows. Returns how many were released."""
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            f"""
            UPDATE {Assignment._meta.db_table} SET status = 'expired', slot = NULL
            WHERE study_id = %s AND status = 'active' AND (%s::bigint IS NULL OR rater_id = %s)
            RETURNING item_id
            """,
            [study.pk, getattr(rater, "pk", None), getattr(rater, "pk", None)],
        )
        item_ids = [row[0] for row in cursor.fetchall()]
        if item_ids:
            recount_items(cursor, sorted(set(item_ids)))
    return len(item_ids)


def assignments_release_overdue(*, study: Study) -> int:
    """Crowd participants past their time limit who did not finish: their open assignments back to the pool,
    and their participation ended. Returns how many assignments were released."""
    overdue = CrowdParticipant.objects.filter(link__study=study, deadline__lte=timezone.now(),
                                              finished_at__isnull=True, returned_at__isnull=True)
    released = 0
    for participant in overdue.select_related("user", "link__study"):
        released += assignments_release(study=study, rater=participant.user)
        participant.finished_at = timezone.now()
        participant.save(update_fields=["finished_at"])
    return released


def recount_items(cursor, item_ids: list[int]) -> None:
    # Recount instead of decrementing, so a hint that drifted heals itself. Lock in id order
    # first: two recounts over overlapping items then cannot deadlock.
    cursor.execute(f"SELECT id FROM {Item._meta.db_table} WHERE id = ANY(%s) ORDER BY id FOR UPDATE", [item_ids])
    cursor.execute(
        f"""
        UPDATE {Item._meta.db_table} i SET slots_taken = (
            SELECT count(*) FROM {Assignment._meta.db_table} a
            WHERE a.item_id = i.id AND a.status <> 'expired' AND a.slot IS NOT NULL)
        WHERE i.id = ANY(%s)
        """,
        [item_ids],
    )


def recount_study(study: Study) -> int:
    """Fix every slots_taken hint of the study that disagrees with the assignments; returns how many
    were wrong. Runs only when a rater finds no work, so the end of a study pays for it, not each pick."""
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            f"""
            SELECT i.id FROM {Item._meta.db_table} i
            WHERE i.study_id = %s AND NOT i.is_attention_check AND i.slots_taken <> (
                SELECT count(*) FROM {Assignment._meta.db_table} a
                WHERE a.item_id = i.id AND a.status <> 'expired' AND a.slot IS NOT NULL)
            """,
            [study.pk],
        )
        wrong = sorted(row[0] for row in cursor.fetchall())
        if wrong:
            recount_items(cursor, wrong)
    return len(wrong)


def _attention_is_due(study: Study, rater) -> bool:
    n_assigned, n_attention = _attention_counts(study.pk, rater.pk)
    return attention_due(rate=study.attention_check_rate, n_assigned=n_assigned, n_attention=n_attention,
                         phase=_rater_phase(study.pk, rater.pk))


# The rater's non-expired assignments and their checks, less those of training items (a training
# item is an attention check too, but not the rater's work). The first part reads only the index
# on (study, rater, status) that carries is_attention_check: index entries, no table rows and no
# join, as a rater's assignments grow with their progress (an expert's 60,000 cost 33 ms joined to
# their items). The second starts from the study's few training items (their partial index).
_ATTENTION_COUNTS = f"""
    SELECT mine.n - training.n, mine.checks - training.checks
    FROM (SELECT count(*) AS n, count(*) FILTER (WHERE a.is_attention_check) AS checks
          FROM {Assignment._meta.db_table} a
          WHERE a.study_id = %(study)s AND a.rater_id = %(rater)s AND a.status <> 'expired') mine,
         (SELECT count(a.id) AS n, count(a.id) FILTER (WHERE a.is_attention_check) AS checks
          FROM {Item._meta.db_table} i
          JOIN {Assignment._meta.db_table} a ON a.item_id = i.id AND a.rater_id = %(rater)s
          WHERE i.study_id = %(study)s AND i.is_training AND a.status <> 'expired') training
"""


def _attention_counts(study_id: int, rater_id: int) -> tuple[int, int]:
    """(assignments, attention checks) of a rater in a study, training and expired ones left out."""
    with prepared_cursor() as cursor:
        cursor.execute(_ATTENTION_COUNTS, {"study": study_id, "rater": rater_id})
        return cursor.fetchone()


def _regular_work_left(study: Study, rater) -> bool:
    """Whether a regular item is still open to this rater: checks are mixed into real work, never
    served alone (a rater left with only gold items would learn what they are)."""
    mine = Assignment.objects.filter(item=OuterRef("pk"), rater=rater).exclude(status=EXPIRED)
    return (open_items(study).exclude(Exists(mine)).exists())


def open_items(study: Study):
    """The study's regular items that want another rater now (see _CAP)."""
    return Item.objects.filter(study=study, is_attention_check=False,
                               slots_taken__lt=sampling_policy.wanted_expression(study))


def _start_key(study: Study, rater) -> int:
    """Where a rater's walk starts: a point of the study's random order of its own (a seeded 64-bit
    hash per study and rater), or the first item in upload order."""
    if not study.randomize_items:
        return 0
    return int.from_bytes(hashlib.sha256(f"start/{study.pk}/{rater.pk}".encode()).digest()[:8], "big", signed=True)


# "Has the rater had this item?" is asked of each candidate the walk meets, by the item (a few rows):
# OFFSET 0 keeps it a per-row probe (PostgreSQL does not turn such a subquery into a join) and `+ 0`
# keeps the rater's own index out of it, since their rows grow with their progress. As a join, a plan
# made while the assignment table was small read the whole table on every pick (it grew from 0.1 to
# 18 ms a pick over a load run, the plan cached on the connection).
def _not_had(*, expired_counts: bool) -> str:
    status = "" if expired_counts else " AND a.status <> 'expired'"
    return (f"NOT EXISTS (SELECT 1 FROM {Assignment._meta.db_table} a"
            f" WHERE a.item_id = i.id AND a.rater_id + 0 = %(rater)s{status} OFFSET 0)")


def _pick_regular(study: Study, rater, walk: tuple[int | None, bool], *, wait: bool,
                  parts_from: int = 0) -> tuple[int, list[int], int] | None:
    """Lock one free item for this rater; returns (item id, output positions, its key).

    The study's items stand in one order (random: `pick_key`, drawn at import; else upload order),
    and each rater walks it from a starting point of their own, resuming where their last item was
    (`StudyMember.pick_cursor`): routed items first (a higher `priority`, judges.services.routing;
    looked for only when the study has some), then the first free item after the cursor, then, once
    past the end, from the beginning. Each is an ordered range read of a partial index
    (item_pick_*_idx) that stops at the first item it can lock (LIMIT 1 FOR UPDATE SKIP LOCKED: a
    rater takes the next free item rather than queueing behind another), so the cost does not grow
    with the number of open items. With wait=True the first candidate is read without a lock and then
    locked alone, waiting for its holder: a transaction waits for at most one row, so waits can never
    form a cycle. The caller re-checks capacity under the lock.
    """
    params, parts, key = _pick_parts(study, rater, walk)
    lock = "" if wait else "FOR UPDATE OF i SKIP LOCKED"
    with prepared_cursor() as cursor:
        for where, order in parts[parts_from:]:
            cursor.execute(_pick_sql(where, order, key, lock), params)
            row = cursor.fetchone()
            if row is not None:
                if wait:
                    cursor.execute(f"SELECT id FROM {Item._meta.db_table} WHERE id = %s FOR UPDATE", [row[0]])
                return row[0], list(row[1]), row[2]
    return None


def _pick_parts(study: Study, rater, walk: tuple[int | None, bool]) -> tuple[dict, list[tuple[str, str]], str]:
    """The walk's parameters, its parts in order (each a filter and an order) and the item's key."""
    cursor_key, routed = walk
    key = "i.pick_key" if study.randomize_items else "i.id"
    cursor_key = _start_key(study, rater) if cursor_key is None else cursor_key
    params = {"study": study.pk, "rpi": study.raters_per_item, "want": sampling_policy.items_wanted_default(study),
              "rater": rater.pk, "cursor": cursor_key}
    parts = [("i.priority > 0", "i.priority DESC, i.pick_key")] if routed else []
    parts += [(f"i.priority = 0 AND {key} > %(cursor)s", key), (f"i.priority = 0 AND {key} <= %(cursor)s", key)]
    return params, parts, key


def _pick_sql(where: str, order: str, key: str, lock: str, also: str = "true") -> str:
    return f"""
        SELECT i.id, ARRAY(SELECT o.position FROM {Output._meta.db_table} o
                           WHERE o.item_id = i.id ORDER BY o.position), {key}
        FROM {Item._meta.db_table} i
        WHERE i.study_id = %(study)s AND NOT i.is_attention_check AND {where} AND i.slots_taken < {_CAP}
          AND {_not_had(expired_counts=False)}  -- an expired one of mine may come back
          AND {also}
        ORDER BY {order} LIMIT 1 {lock}
    """


def _pick_attention(study: Study, rater) -> tuple[int, list[int]] | None:
    """Lock an attention-check item this rater has not had, in their own random order (a seeded
    64-bit hash per rater: checks are few, so ordering them is cheap); (item id, output positions)."""
    seed = int.from_bytes(hashlib.sha256(f"order/{study.pk}/{rater.pk}".encode()).digest()[:8], "big", signed=True)
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            SELECT i.id, ARRAY(SELECT o.position FROM {Output._meta.db_table} o
                               WHERE o.item_id = i.id ORDER BY o.position)
            FROM {Item._meta.db_table} i
            WHERE i.study_id = %(study)s AND i.is_attention_check AND NOT i.is_training
              AND {_not_had(expired_counts=True)}  -- a check is never shown twice
            ORDER BY i.priority DESC, hashint8extended(i.id, %(seed)s), i.id
            LIMIT 1 FOR UPDATE OF i SKIP LOCKED
            """,
            {"study": study.pk, "rater": rater.pk, "seed": seed},
        )
        row = cursor.fetchone()
    return (row[0], list(row[1])) if row else None


def assignment_reclaim(*, assignment: Assignment) -> bool:
    """Give an expired assignment back to its rater if its item still has a free slot (a submit
    that arrives after the lease ran out). Call inside a transaction holding the assignment row."""
    if assignment.status != EXPIRED:
        return True
    study = assignment.study
    item = Item.objects.select_for_update().get(pk=assignment.item_id)
    if assignment.is_attention_check:
        slot = None
    else:
        taken = set(Assignment.objects.filter(item=item, slot__isnull=False).exclude(status=EXPIRED)
                    .values_list("slot", flat=True))
        free = [s for s in range(study.raters_per_item) if s not in taken]
        if not free:
            return False
        slot = free[0]
    assignment.status, assignment.slot = ACTIVE, slot
    assignment.expires_at = timezone.now() + lease_duration(study)
    assignment.save(update_fields=["status", "slot", "expires_at"])
    if slot is not None:
        Item.objects.filter(pk=item.pk).update(slots_taken=len(taken) + 1)
    return True


def assignment_touch(*, assignment: Assignment) -> None:
    """Extend an active assignment's lease (the rater is still working on it)."""
    if assignment.status == ACTIVE:
        assignment.expires_at = timezone.now() + lease_duration(assignment.study)
        Assignment.objects.filter(pk=assignment.pk, status=ACTIVE).update(expires_at=assignment.expires_at)
