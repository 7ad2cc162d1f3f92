"""Formatters: a dataset turned into the bytes of one file format, as an iterator of chunks.

Every formatter yields bytes as it goes (never the whole file), so the same iterator feeds
a StreamingHttpResponse, a file on disk, or a checksum. Output is deterministic: the same
ratings give byte-identical files (release checksums can be re-verified by re-exporting).
"""

from __future__ import annotations

import csv
import io
import json
from typing import Any, Callable, Iterable, Iterator

import pyarrow as pa
import pyarrow.parquet as pq

from annotation.datasets import DEFAULT_DELTA, UNRELEASED
from annotation.datasets.tables import (
    CONSENSUS_COLUMNS, CONSENSUS_SCHEMA, consensus_batches, consensus_rows, count_comparative_answers, item_chunks,
    output_score_rows, score_fields,
)
from annotation.datasets.texts import ITEMS_SCHEMA, item_batches, json_lines
from annotation.datasets.row_check import (
    RowCounter, checked_rows, csv_rows, items_checked, ratings_read_checked,
)
from annotation.datasets.spreadsheet import spreadsheet_safe_column
from annotation.models import Assignment, Output, Study
from annotation.reports.comparisons import as_comparisons, comparative_answers, comparative_criteria
from annotation.reports.long_arrow import rating_batches
from annotation.reports.long_json import rating_json_lines
from annotation.reports.ratings import LONG_SCHEMA, copy_ratings
from annotation.stats import comparisons as cmp
from annotation.stats.consensus import preference_pairs

Progress = Callable[[int], None]
SPREADSHEET_TEXT_COLUMNS = ("item", "system", "majority")
PARQUET_ROW_GROUP = 65_536


def ratings_csv(study: Study, *, progress: Progress | None = None, **_: Any) -> Iterator[bytes]:
    rows = RowCounter(start=-1)  # the header line is no row
    return checked_rows(study, _with_progress(rows.bytes_through(copy_ratings(study, fmt="csv"), csv_rows), progress),
                        rows, what="the CSV export")


def ratings_jsonl(study: Study, *, progress: Progress | None = None, **_: Any) -> Iterator[bytes]:
    # Written in Arrow; the bytes are those of copy_ratings(study, fmt="jsonl") (long_json says why).
    rows = RowCounter()
    lines = rows.bytes_through(rating_json_lines(study), lambda chunk: chunk.count(b"\n"))  # JSON has no raw newlines
    return checked_rows(study, _with_progress(lines, progress), rows, what="the JSONL export")


def _with_progress(chunks: Iterator[bytes], progress: Progress | None) -> Iterator[bytes]:
    for chunk in chunks:
        if progress:
            progress(chunk.count(b"\n"))  # rows: exact for JSON lines, near enough for CSV
        yield chunk


class _DrainSink:
    """A write-only file whose bytes are taken out after each row group (parquet streaming)."""

    def __init__(self):
        self._buf = io.BytesIO()
        self._written = 0
        self.closed = False

    def write(self, data) -> int:
        n = self._buf.write(data)
        self._written += n
        return n

    def tell(self) -> int:
        return self._written

    def flush(self) -> None:
        pass

    def close(self) -> None:
        self.closed = True

    def drain(self) -> bytes:
        data = self._buf.getvalue()
        self._buf = io.BytesIO()
        return data


def ratings_parquet(study: Study, *, progress: Progress | None = None, **_: Any) -> Iterator[bytes]:
    """The long format as Parquet (zstd) in row groups of PARQUET_ROW_GROUP rows: fixed, so the
    file's bytes depend on the ratings only, not on how the read was split (release checksums)."""
    rows = RowCounter()
    yield from checked_rows(study, parquet_stream(rows.batches_through(rating_batches(study)),
                                                  _with_study(LONG_SCHEMA, study), progress=progress),
                            rows, what="the Parquet export")


def _with_study(schema: pa.Schema, study: Study) -> pa.Schema:
    return schema.with_metadata({"concord.study": study.slug, "concord.rubric": str(study.rubric_version)})


def parquet_stream(batches: Iterable[pa.RecordBatch], schema: pa.Schema, *,
                   progress: Progress | None = None) -> Iterator[bytes]:
    """A Parquet file's bytes (zstd, row groups of PARQUET_ROW_GROUP rows) as its row groups are written;
    `progress(n)` is told each group's rows."""
    sink = _DrainSink()
    with pq.ParquetWriter(sink, schema, compression="zstd", compression_level=1) as writer:
        for group in _row_groups(batches, PARQUET_ROW_GROUP):
            writer.write_table(group, row_group_size=PARQUET_ROW_GROUP)
            if progress:
                progress(group.num_rows)
            if data := sink.drain():
                yield data
    if data := sink.drain():
        yield data


def _row_groups(batches: Iterable[pa.RecordBatch], rows: int) -> Iterator[pa.Table]:
    """Tables of exactly `rows` rows (the last one shorter) from batches of any sizes."""
    pending: list[pa.RecordBatch] = []
    held = 0
    for batch in batches:
        pending.append(batch)
        held += batch.num_rows
        while held >= rows:
            table = pa.Table.from_batches(pending)
            yield table.slice(0, rows)
            rest = table.slice(rows)
            pending, held = rest.to_batches(), rest.num_rows
    if held:
        yield pa.Table.from_batches(pending)


def evaluation_date(study: Study) -> str | None:
    last = (Assignment.objects.filter(study=study, status=Assignment.Status.SUBMITTED)
            .order_by("-submitted_at").values_list("submitted_at", flat=True).first())
    return last.date().isoformat() if last else None


def preference_pairs_jsonl(study: Study, *, delta: float = DEFAULT_DELTA, dataset_version: str = UNRELEASED,
                           progress: Progress | None = None, **_: Any) -> Iterator[bytes]:
    """RLHF preference pairs in seed 002's schema: every pair of outputs of an item whose
    overall consensus differs by at least `delta` (ties and near-ties left out)."""
    if not delta > 0:  # checked before any byte is made, so a bad request fails cleanly
        raise ValueError("delta must be positive, so that ties are never pairs")
    if comparative_criteria(study.rubric):
        key = comparative_criteria(study.rubric)[0]["key"]
        answers = RowCounter()
        return checked_rows(study, _comparative_pairs(study, key, dataset_version, answers), answers,
                            what="the pairs export", count=lambda s: count_comparative_answers(s, key))
    read = RowCounter()
    return ratings_read_checked(study, _pairs(study, delta, dataset_version, progress, read), read,
                                what="the pairs export")


def _pairs(study: Study, delta: float, dataset_version: str, progress: Progress | None,
           read: RowCounter) -> Iterator[bytes]:
    when = evaluation_date(study)
    fields = score_fields(study)
    for df, outputs in read.frames_through(item_chunks(study, progress=progress)):
        rows = output_score_rows(study, df, outputs)
        pairs = preference_pairs(rows, min_delta=delta, dataset_version=dataset_version,
                                 evaluation_date=when, score_fields=fields)
        if pairs:
            yield "".join(json.dumps(p, ensure_ascii=False) + "\n" for p in pairs).encode()


def _comparative_pairs(study: Study, key: str, dataset_version: str, answers: RowCounter) -> Iterator[bytes]:
    """Seed 002's pairs from the raters' comparisons on the rubric's first comparative question:
    per item and pair of outputs, the pairs its answers imply (a ranking or a best-worst answer
    implies several); the majority side is chosen. `overall` is each side's share of those
    judgements (ties half) with its Wilson interval, `vote_count` their number; an even split is
    no pair. (delta, a difference of scores, has no meaning here.) `answers` counts the answers read, for
    the row check: a stored answer that could not be read is a row lost, not skipped."""
    read = comparative_answers(study, [key])
    answers.rows += len(read)
    judgements = [((a.item_id, a.item), w) for a in read for w in as_comparisons([a], a.kind).wins]
    shares = cmp.item_pair_shares(judgements)
    if not shares:
        return
    outputs = {(item_id, system): (content, context) for item_id, system, content, context in Output.objects.filter(
        item_id__in={item_id for (item_id, _), _, _ in shares}).values_list("item_id", "system", "content",
                                                                           "item__context").iterator(chunk_size=2000)}
    when = evaluation_date(study)
    lines = []
    for ((item_id, item), a, b), (wins_a, n) in sorted(shares.items(), key=lambda kv: (kv[0][0][0], kv[0][1:])):
        if wins_a * 2 == n:
            continue
        (chosen, w), (rejected, _) = ((a, wins_a), (b, n - wins_a)) if wins_a * 2 > n else ((b, n - wins_a), (a, wins_a))
        lines.append(json.dumps({
            "prompt": outputs[(item_id, chosen)][1],
            "chosen": outputs[(item_id, chosen)][0],
            "rejected": outputs[(item_id, rejected)][0],
            "metadata": {
                "challenge": item, "chosen_model": chosen, "rejected_model": rejected,
                "chosen_scores": {key: w / n, "overall": w / n, "confidence_interval": cmp.wilson_interval(w, n),
                                  "vote_count": n},
                "rejected_scores": {key: 1 - w / n, "overall": 1 - w / n,
                                    "confidence_interval": cmp.wilson_interval(n - w, n), "vote_count": n},
                "score_difference": round(2 * w / n - 1, 10),
                "dataset_version": dataset_version, "evaluation_date": when,
            },
        }, ensure_ascii=False) + "\n")
    if lines:
        yield "".join(lines).encode()


def consensus_csv(study: Study, *, progress: Progress | None = None, **_: Any) -> Iterator[bytes]:
    """Per output: each criterion's consensus with its CI (or the majority label), the group
    scores and the overall with the CI of the raters' own overall scores."""
    read = RowCounter()
    return ratings_read_checked(study, _consensus_csv(study, progress, read), read, what="the consensus export")


def _consensus_csv(study: Study, progress: Progress | None, read: RowCounter) -> Iterator[bytes]:
    yield (",".join(CONSENSUS_COLUMNS) + "\n").encode()
    for df, outputs in read.frames_through(item_chunks(study, progress=progress)):
        table = consensus_rows(study, df, outputs)
        if len(table):
            for column in SPREADSHEET_TEXT_COLUMNS:  # item ids, system names and labels come from uploads
                table[column] = spreadsheet_safe_column(table[column])
            buf = io.StringIO()
            table.to_csv(buf, header=False, index=False, lineterminator="\n", quoting=csv.QUOTE_MINIMAL)
            yield buf.getvalue().encode()




def huggingface_zip(study: Study, *, progress: Progress | None = None, dataset_version: str = UNRELEASED,
                    license: str = "", changelog: str = "", **_: Any) -> Iterator[bytes]:
    """A Hugging Face dataset folder, zipped: the ratings' Parquet file and a dataset card (YAML
    metadata with the license chosen at release, the task, the size, the rubric and agreement)."""
    from annotation.datasets.card import DATA_FILE, card_text, hf_zip
    from annotation.reports.study import cached_study_report  # the report reads exports' tables

    rows = [0]

    def counted(n: int) -> None:
        rows[0] += n
        if progress:
            progress(n)

    def card(n_rows: int) -> str:
        agreement = cached_study_report(study).get("agreement", {})
        return card_text(study=study, version=dataset_version, license=license, n_rows=n_rows,
                         agreement=agreement, changelog=changelog)

    return hf_zip([(DATA_FILE, ratings_parquet(study, progress=counted))], card, lambda: rows[0])


def items_parquet(study: Study, *, progress: Progress | None = None, **_: Any) -> Iterator[bytes]:
    """What was rated, one row per output: the item's context, the output's system, kind and text."""
    rows = RowCounter()
    return items_checked(study, parquet_stream(rows.batches_through(item_batches(study, progress=progress)),
                                               _with_study(ITEMS_SCHEMA, study)), rows, what="the items export")


def items_jsonl(study: Study, *, progress: Progress | None = None, **_: Any) -> Iterator[bytes]:
    rows = RowCounter()
    return items_checked(study, json_lines(rows.batches_through(item_batches(study, progress=progress))), rows,
                         what="the items export")


def _consensus_batches(study: Study, progress: Progress | None, read: RowCounter) -> Iterator[pa.RecordBatch]:
    from annotation.reports.rater_models import modelled_labels  # (reads the whole study: only when asked)

    return consensus_batches(study, modelled=modelled_labels(study), progress=progress, read=read)


def consensus_parquet(study: Study, *, progress: Progress | None = None, **_: Any) -> Iterator[bytes]:
    """The consensus table with the method of each row: means, majorities and the rater model's
    labels with their posteriors."""
    read = RowCounter()
    return ratings_read_checked(study, parquet_stream(_consensus_batches(study, progress, read),
                                                      _with_study(CONSENSUS_SCHEMA, study)), read,
                                what="the consensus export")


def consensus_jsonl(study: Study, *, progress: Progress | None = None, **_: Any) -> Iterator[bytes]:
    read = RowCounter()
    return ratings_read_checked(study, json_lines(_consensus_batches(study, progress, read)), read,
                                what="the consensus export")


def raters_parquet(study: Study, **_: Any) -> Iterator[bytes]:
    """Each rater's estimates per criterion (annotation.reports.rater_models.RATERS_SCHEMA)."""
    from annotation.reports.rater_models import RATERS_SCHEMA, rater_batches, study_rater_models

    return parquet_stream(rater_batches(study_rater_models(study)), _with_study(RATERS_SCHEMA, study))


def huggingface_full_zip(study: Study, *, progress: Progress | None = None, dataset_version: str = UNRELEASED,
                         license: str = "", changelog: str = "", **_: Any) -> Iterator[bytes]:
    """A Hugging Face dataset folder, zipped, with what was rated: the ratings, the items and outputs
    (context, output text, system, kind), the consensus with its method and the rater models'
    estimates of each rater, each a config of the card (`load_dataset(folder, "items")`); the card
    holds the rubric, the agreement and the study's methods paragraph."""
    from annotation.datasets.card import Table, card_text, hf_zip
    from annotation.reports.methods import methods_paragraph
    from annotation.reports.rater_models import RATERS_SCHEMA, rater_batches, study_rater_models
    from annotation.reports.study import cached_study_report, with_threshold

    models = study_rater_models(study)
    ratings = Table("ratings", "data/ratings.parquet", "one rating: item, output, system, rater, criterion, value, "
                    "score, reasoning, spans, time on task, shown position")
    items = Table("items", "data/items.parquet", "one output of an item: the item's context, the output's system, "
                  "kind and text (an item without outputs: one row, no output); joins `ratings` on (item, output)")
    consensus = Table("consensus", "data/consensus.parquet", "one output and criterion (or group, or overall): "
                      "its consensus and the `method` that made it; for a modelled label its posterior beside "
                      "the majority")
    raters = Table("raters", "data/raters.parquet", "one rater and criterion: each rater model's estimate of "
                   "the rater (accuracy, spammer score, bias, noise)")

    def card(n_rows: int) -> str:
        report = with_threshold(cached_study_report(study))
        return card_text(study=study, version=dataset_version, license=license, n_rows=n_rows,
                         agreement=report.get("agreement", {}), changelog=changelog,
                         tables=[ratings, items, consensus, raters], methods=methods_paragraph(study, report))

    read = RowCounter()  # the ratings the consensus read
    return hf_zip([
        (ratings.path, checked_rows(study, parquet_stream(ratings.counted(rating_batches(study)),
                                                          _with_study(LONG_SCHEMA, study), progress=progress),
                                    ratings.rows, what="the full Hugging Face export's ratings")),
        (items.path, items_checked(study, parquet_stream(items.counted(item_batches(study)),
                                                         _with_study(ITEMS_SCHEMA, study)),
                                   items.rows, what="the full Hugging Face export's items")),
        (consensus.path, ratings_read_checked(
            study, parquet_stream(consensus.counted(consensus_batches(study, modelled=models["labels"], read=read)),
                                  _with_study(CONSENSUS_SCHEMA, study)), read,
            what="the full Hugging Face export's consensus")),
        (raters.path, parquet_stream(raters.counted(rater_batches(models)), _with_study(RATERS_SCHEMA, study))),
    ], card, ratings.rows)
