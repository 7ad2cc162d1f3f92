"""The Comparisons section's pairwise sums kept per block of assignment ids, so that the report of a
study that grows re-reads only the blocks that changed (issue 26).

    pairwise_sums_incremental(study, keys) -> {key: PairwiseSums | None}   # == pairwise_sums(study, keys)

A block is the study's answers whose assignment id falls in [b * BLOCK_IDS, (b + 1) * BLOCK_IDS). Each
block's partial sums (per criterion: wins by pairs of system names, answers, first-shown wins, decided
answers, its distinct rater and item ids) are kept in Django's cache (Redis) with the block's change
count (annotation.reports.rating_changes: kept by the database's triggers); losing them only costs a
read. Every report reads the blocks' change counts (a few rows per block), reads again only the blocks
whose count moved, and adds the partials up: systems sorted by name, wins added by name, distinct
raters and items by np.unique over the union. The wins are sums of 1 and 0.5,
exact in floats in any order, so the result is identical to pairwise_sums.

Why it is exact. A block's partial is a function of (1) the rows the read selects in the block
(pairwise_sums.answers_from: submitted, not ignored, not an attention check, item-level, the
criteria asked, an object value), each row's criterion, value, item and rater; and (2) the outputs
(id, item, system) of the items those rows name, through which ids become systems.
- (1) Every statement that inserts, updates or deletes ratings, or inserts, updates or deletes
  assignments submitted before or after it, adds to the change count of the block of each assignment
  it touched, in its own transaction (migration 0018's triggers, so raw SQL and QuerySet.update are
  counted too). Everything the read selects in a block is a rating of an assignment in that block:
  any change to it (a rating added, edited or deleted; an assignment submitted or un-submitted,
  ignored, flagged as an attention check, given another rater or item) moves the count, and a count
  never moves back. The counts are read before the blocks' rows, and a partial is stored with the
  count read then: a change committed between the two reads is in the rows but not in the stored
  count, so the next report reads that block again (stricter, never stale). A transaction that commits
  late, with ids below ones already seen, moves its blocks' counts when it commits. The triggers fire
  in session_replication_role = replica too (ENABLE ALWAYS: the benches' bulk loads run so); nothing
  is missed but a write made with the triggers disabled by hand (ALTER TABLE ... DISABLE TRIGGER).
  Before, the fingerprint was a hash sum over every answer of the study, one aggregate over all of
  them per report: 7.6 s of a 5M-answer arena's report when nothing had changed.
- (2) Outputs: each partial keeps the outputs' state when it was summed (largest output id M, count
  and hash sum of (id, item, system) over the study's outputs, asked before the outputs were read: an
  older state only makes the next check stricter) and the hash sum of the outputs of its own items.
  Same state now: kept. The outputs up to M unchanged (a study that grows adds items with their
  outputs every round): only the outputs above M are read, and a block is read again only if one of
  them belongs to its items. Otherwise all outputs are read and each block's items' hash sum compared.
  A new system's outputs therefore cost no re-read of blocks whose items did not change.
- An answer may name an output of another item (never written so): pairwise_sums resolves it when
  that item is read anywhere in the study, a block only among its own items. Each partial keeps the
  whole-number ids it could not resolve; if any of them is an output of the study, the result is
  computed by pairwise_sums in full (exact, as before).
- A criterion with an answer not showing exactly two outputs in any block is None, as in
  pairwise_sums: the caller takes the answer-by-answer path.

Block width: BLOCK_IDS = 2**16 assignment ids. With one pairwise answer per assignment (arenas) a block
holds at most 65,536 answers: the size of the ranges the bulk reader already reads well (5,000 to
50,000 assignments; smaller ranges cost more per row), so a cold read costs what it did (16 blocks at a
million answers); an append of 1% of a million answers re-reads one or two blocks; a partial keeps at
most 2**16 rater and item ids per criterion (small in Redis).
"""

from __future__ import annotations

import hashlib
import zlib
from typing import Iterator, Sequence

import numpy as np
import pyarrow as pa
from django.core.cache import cache
from django.db import connection

from annotation.models import Assignment, Study
from annotation.reports import parallel_copy
from annotation.reports.pairwise_sums import (
    ANSWER_COLUMNS, ANSWER_SCHEMA, Answers, PairwiseSums, answers_by_system, answers_from, pairwise_sums,
    summable, sums_with_ids)
from annotation.reports.rating_changes import CHANGE_BLOCK_IDS, block_changes
from annotation.reports.rating_sql import (
    ASSIGNMENTS as _A, ITEMS as _I, OUTPUTS as _O, arrow_batches, arrow_table, copy_statement,
)

BLOCK_IDS = CHANGE_BLOCK_IDS  # the triggers' blocks: each block's change count is its own
CACHE_SECONDS = 7 * 24 * 3600  # rounds of a study may be days apart; a lost block is one more read
_MOD = 2**64

_OUTPUT_HASH = "hashtextextended(concat_ws(' ', o.id, o.item_id, o.system), 0)"
_OUTPUTS = pa.schema([("id", pa.int64()), ("item_id", pa.int64()), ("system", pa.string()),
                      ("output_hash", pa.int64())])


def _sql_hash_sum(expr: str, where: str = "") -> str:
    """Sum mod 2**64 of signed 64-bit hashes in SQL (what a uint64 sum of them gives in numpy)."""
    total = f"sum({expr})" + (f" FILTER (WHERE {where})" if where else "")
    return f"mod(mod(coalesce({total}, 0), {_MOD}) + {_MOD}, {_MOD})"


def _outputs_state(study: Study, prefixes: Sequence[int]) -> tuple[tuple[int, int, int], dict[int, tuple[int, int]]]:
    """(largest id, count, hash sum) of the study's outputs, and (count, hash sum) of those with ids up
    to each of `prefixes`, from one snapshot."""
    cols = [f"coalesce(max(o.id), 0), count(*), {_sql_hash_sum(_OUTPUT_HASH)}"]
    params: list = []
    for m in prefixes:
        cols.append(f"count(*) FILTER (WHERE o.id <= %s), {_sql_hash_sum(_OUTPUT_HASH, 'o.id <= %s')}")
        params += [m, m]
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {', '.join(cols)} FROM {_O} o JOIN {_I} i ON i.id = o.item_id WHERE i.study_id = %s",
                       params + [study.pk])
        row = [int(v) for v in cursor.fetchone()]
    return (row[0], row[1], row[2]), {m: (row[3 + 2 * k], row[4 + 2 * k]) for k, m in enumerate(prefixes)}


def _read_outputs(study: Study, blocks: Sequence[int] | None = None, *, after: int | None = None) -> pa.Table:
    """The study's outputs in id order, with each one's hash: all of them, those of the items of
    `blocks`' assignments, or those with ids above `after`."""
    where, params = "i.study_id = %s", [study.pk]
    if blocks is not None:
        ranges = " OR ".join(["(a.id >= %s AND a.id < %s)"] * len(blocks))
        where += f" AND o.item_id IN (SELECT a.item_id FROM {_A} a WHERE a.study_id = %s AND ({ranges}))"
        params += [study.pk] + [v for b in blocks for v in (b * BLOCK_IDS, (b + 1) * BLOCK_IDS)]
    if after is not None:
        where += " AND o.id > %s"
        params.append(after)
    sql = (f"SELECT o.id, o.item_id, o.system, {_OUTPUT_HASH} FROM {_O} o JOIN {_I} i ON i.id = o.item_id"
           f" WHERE {where} ORDER BY o.id")
    return pa.Table.from_batches(list(arrow_batches(sql, params, _OUTPUTS)), schema=_OUTPUTS)


def _item_digests(outputs: pa.Table) -> tuple[np.ndarray, np.ndarray]:
    """(item ids sorted, hash sum of each item's outputs): computed once per read of the outputs, so
    that checking many blocks costs a lookup of their items, not a pass over every output."""
    item = outputs["item_id"].to_numpy()
    hashes = outputs["output_hash"].to_numpy().astype(np.int64).view(np.uint64)
    if not item.size:
        return item.astype(np.int64), hashes
    order = np.argsort(item, kind="stable")
    item, hashes = item[order], hashes[order]
    starts = np.flatnonzero(np.r_[True, item[1:] != item[:-1]])
    return item[starts], np.add.reduceat(hashes, starts)


def _outputs_digest(digests: tuple[np.ndarray, np.ndarray], items: np.ndarray) -> int:
    """Hash sum of the outputs of `items` (the outputs a block's ids may resolve to)."""
    keys, sums = digests
    at = np.minimum(np.searchsorted(keys, items), max(keys.size - 1, 0))
    found = keys[at] == items if keys.size else np.zeros(items.size, bool)
    return int(sums[at[found]].sum(dtype=np.uint64))


def _block_tables(study: Study, keys: Sequence[str], blocks: Sequence[int]) -> Iterator[tuple[int, pa.Table]]:
    """The read's rows of each block: on several connections when
    possible (fewer blocks than connections, as after an append, are split so that each one works)."""
    parallel = parallel_copy.parallel_possible()
    pieces = parallel_copy.workers() if parallel and len(blocks) < parallel_copy.workers() else 1
    owners, statements = [], []
    for b in blocks:
        step = -(-BLOCK_IDS // pieces)
        for lo in range(b * BLOCK_IDS, (b + 1) * BLOCK_IDS, step):
            body, params = answers_from(study, keys, (lo, min(lo + step, (b + 1) * BLOCK_IDS)))
            owners.append(b)
            statements.append((f"SELECT {ANSWER_COLUMNS}{body}", params))
    if parallel and len(statements) > 1:
        copies = [(copy_statement(sql), params) for sql, params in statements]
        tables = parallel_copy.copy_in_parallel(copies, parse=lambda data: arrow_table(data, ANSWER_SCHEMA))
    else:
        tables = (pa.Table.from_batches(list(arrow_batches(sql, params, ANSWER_SCHEMA)), schema=ANSWER_SCHEMA)
                  for sql, params in statements)
    parts: list[pa.Table] = []
    for k, table in enumerate(tables):
        parts.append(table)
        if k + 1 == len(owners) or owners[k + 1] != owners[k]:
            yield owners[k], pa.concat_tables(parts)
            parts = []


def _bytes(a: np.ndarray) -> bytes:
    return zlib.compress(np.ascontiguousarray(a).tobytes(), 1)


def _array(data: bytes, dtype) -> np.ndarray:
    return np.frombuffer(zlib.decompress(data), dtype=dtype)


def _union(stored: list[bytes]) -> np.ndarray:
    """The distinct ids of several stored id arrays."""
    return np.unique(np.concatenate([_array(d, np.int64) for d in stored] or [np.zeros(0, np.int64)]))


def _partial(table: pa.Table, outputs: pa.Table, digests: tuple[np.ndarray, np.ndarray],
             outputs_state: tuple[int, int, int], keys: Sequence[str], changes: int) -> dict:
    """A block's cache entry: its change count (read before its rows), the outputs it depends on, and
    per criterion its sums with the distinct rater and item ids (None: an answer not showing two)."""
    answers: Answers = answers_by_system(table, outputs)
    items = np.unique(answers.item)
    per_key: dict[str, dict | None] = {}
    for key in keys:
        ok = summable(answers, key)
        if ok is None:
            per_key[key] = None
            continue
        sums, raters, key_items = sums_with_ids(answers, ok)
        per_key[key] = {"systems": sums.systems, "wins": _bytes(sums.wins.astype(np.float64)),
                        "n_answers": sums.n_answers, "first_wins": sums.first_wins, "decided": sums.decided,
                        "raters": _bytes(raters.astype(np.int64)), "items": _bytes(key_items.astype(np.int64))}
    return {"changes": changes,
            "outputs": outputs_state, "outputs_digest": _outputs_digest(digests, items),
            "items": _bytes(items.astype(np.int64)), "unresolved": _bytes(answers.unresolved.astype(np.int64)),
            "keys": per_key}


def _cache_key(study: Study, keys: Sequence[str], block: int) -> str:
    criteria = hashlib.sha256("\0".join(keys).encode()).hexdigest()[:16]
    return f"concord:pairwise-block:v3:{study.pk}:{study.created_at.timestamp()}:{criteria}:{BLOCK_IDS}:{block}"


def _names_an_output(study: Study, ids: np.ndarray) -> bool:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT EXISTS (SELECT 1 FROM {_O} o JOIN {_I} i ON i.id = o.item_id"
                       " WHERE i.study_id = %s AND o.id = ANY(%s))", [study.pk, ids.tolist()])
        return bool(cursor.fetchone()[0])


def _blocks_spanned(study: Study) -> range:
    """Every block from the study's first submitted assignment to its last (some may hold none)."""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT min(id), max(id) FROM {_A} WHERE study_id = %s AND status = %s",
                       [study.pk, Assignment.Status.SUBMITTED])
        lo, hi = cursor.fetchone()
    return range(0) if lo is None else range(lo // BLOCK_IDS, hi // BLOCK_IDS + 1)


def pairwise_sums_incremental(study: Study, keys: Sequence[str]) -> dict[str, PairwiseSums | None]:
    """pairwise_sums(study, keys), from the kept partials of the blocks that did not change."""
    keys = list(keys)
    if not keys:
        return {}
    changes = block_changes(study)  # before any row is read (module docstring, (1))
    spanned = _blocks_spanned(study)
    names = {b: _cache_key(study, keys, b) for b in spanned}
    kept = cache.get_many(list(names.values()))
    entries = {b: kept[names[b]] for b in spanned
               if names[b] in kept and kept[names[b]]["changes"] == changes.get(b, 0)}
    missing = [b for b in spanned if b not in entries]
    to_store: dict[str, dict] = {}
    outputs, state = _check_outputs(study, entries, missing, to_store, names)
    if missing:
        if outputs is None:
            # All outputs for a first report; after an append, only those of the blocks read.
            outputs = _read_outputs(study, None if len(missing) == len(spanned) else sorted(missing))
        digests = _item_digests(outputs)
        for b, table in _block_tables(study, keys, sorted(missing)):
            to_store[names[b]] = entries[b] = _partial(table, outputs, digests, state, keys, changes.get(b, 0))
    if to_store:
        cache.set_many(to_store, CACHE_SECONDS)
    unresolved = _union([e["unresolved"] for e in entries.values()])
    if unresolved.size and _names_an_output(study, unresolved):
        return pairwise_sums(study, keys)  # an answer naming another item's output: resolved study-wide
    return {key: _merged([e["keys"][key] for e in entries.values()]) for key in keys}


def _check_outputs(study: Study, entries: dict[int, dict], missing: list[int], to_store: dict[str, dict],
                   names: dict[int, str]) -> tuple[pa.Table | None, tuple[int, int, int]]:
    """Keeps the entries whose items' outputs did not change since they were stored, moves the others
    to `missing`; returns the outputs it had to read in full (or None) and the outputs' state, asked
    before any of them was read (an older state only makes the next check stricter).

    An entry records the outputs' state when stored: (largest id M, count, hash sum). Same state: kept.
    Outputs up to M as they were (a study that grows adds items and outputs): only outputs above M are
    read, and an entry is kept when none of them belongs to its items. Otherwise every output is read
    and the hash sum of those of the entry's items compared with the one it was summed with."""
    prefixes = sorted({e["outputs"][0] for e in entries.values()})
    state, prefix = _outputs_state(study, prefixes)
    moved = {b: e for b, e in entries.items() if tuple(e["outputs"]) != state}
    appended = {b: e for b, e in moved.items() if prefix[e["outputs"][0]] == tuple(e["outputs"][1:])}
    outputs = None
    if appended:
        new = _read_outputs(study, after=min(e["outputs"][0] for e in appended.values()))
        new_ids, new_items = new["id"].to_numpy(), new["item_id"].to_numpy()
        for b, e in appended.items():
            touched = np.isin(new_items[new_ids > e["outputs"][0]], _array(e["items"], np.int64)).any()
            if not touched:
                to_store[names[b]] = entries[b] = {**e, "outputs": state}
                del moved[b]
    if any(b not in appended for b in moved):
        outputs = _read_outputs(study)
        digests = _item_digests(outputs)
        for b, e in list(moved.items()):
            if b not in appended and _outputs_digest(digests, _array(e["items"], np.int64)) == e["outputs_digest"]:
                to_store[names[b]] = entries[b] = {**e, "outputs": state}
                del moved[b]
    for b in moved:
        del entries[b]
        missing.append(b)
    return outputs, state


def _merged(partials: list[dict | None]) -> PairwiseSums | None:
    """The blocks' partials of one criterion added up (None if any block has an answer not showing two)."""
    if any(p is None for p in partials):
        return None
    systems = sorted({s for p in partials for s in p["systems"]})
    at = {s: i for i, s in enumerate(systems)}
    wins = np.zeros((len(systems), len(systems)))
    for p in partials:
        idx = np.array([at[s] for s in p["systems"]], dtype=np.int64)
        wins[np.ix_(idx, idx)] += _array(p["wins"], np.float64).reshape(idx.size, idx.size)
    raters, items = _union([p["raters"] for p in partials]), _union([p["items"] for p in partials])
    return PairwiseSums(systems=systems, wins=wins, n_answers=sum(p["n_answers"] for p in partials),
                        n_raters=int(raters.size), n_items=int(items.size),
                        first_wins=sum(p["first_wins"] for p in partials), decided=sum(p["decided"] for p in partials))


def forget(study: Study, keys: Sequence[str]) -> None:
    """Drop the study's kept partials (the next report reads every block: benches' cold runs)."""
    cache.delete_many([_cache_key(study, list(keys), b) for b in _blocks_spanned(study)])
