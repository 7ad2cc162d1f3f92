"""Dataset exports as a small pipeline: dataset (what is read, in chunks) -> formatter
(bytes of one file format, yielded as they are made) -> writer (a file with its checksum,
or an HTTP response). Memory stays flat as studies grow.

    export_chunks(study, "parquet") -> Iterator[bytes]
    export_to_file(study, "pairs", path, delta=0.5) -> Written(path, sha256, size)
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

from annotation.datasets.writers import Written, write_file
from annotation.models import Study

DEFAULT_DELTA = 0.5  # seed 002: pairs need a consensus difference of at least 0.5 points
UNRELEASED = "0.0.0-dev"


def _formatter(name: str) -> Callable[..., Iterator[bytes]]:
    """formatters.<name>, imported on the first export: the formatters import pandas and pyarrow,
    which the views that list FORMATS (and every process that loads the URL conf) do without."""
    def export(study: Study, **options: Any) -> Iterator[bytes]:
        from annotation.datasets import formatters

        return getattr(formatters, name)(study, **options)

    export.__name__ = export.__qualname__ = name
    return export


@dataclass(frozen=True)
class ExportFormat:
    key: str
    label: str
    description: str
    extension: str
    content_type: str
    formatter: Callable[..., Iterator[bytes]]
    unit: str  # what progress counts: "rows", "items" or "chunks" (of items)


FORMATS: dict[str, ExportFormat] = {f.key: f for f in (
    ExportFormat("csv", "Ratings (CSV)", "Every rating in long format: item, output, system, rater, criterion, "
                 "value, score, reasoning, spans, ignore flag and reason, comment, time on task, shown position.",
                 ".csv", "text/csv; charset=utf-8", _formatter("ratings_csv"), "rows"),
    ExportFormat("jsonl", "Ratings (JSONL)", "The same long format, one JSON object per line, values and spans "
                 "as nested JSON.", ".jsonl", "application/x-ndjson", _formatter("ratings_jsonl"), "rows"),
    ExportFormat("parquet", "Ratings (Parquet)", "The same long format, typed columns, zstd-compressed.",
                 ".parquet", "application/vnd.apache.parquet", _formatter("ratings_parquet"), "rows"),
    ExportFormat("pairs", "RLHF preference pairs (JSONL)", "Seed 002's schema: every pair of an item's "
                 "outputs whose overall consensus differs by at least delta; ties and near-ties left out, and "
                 "outputs rated by fewer than max(2, the study's consensus minimum) raters. A comparative "
                 "study's pairs come from its first comparative question: the side most of the judgements "
                 "of the pair chose (ties half), its share as the score, with its Wilson interval.",
                 ".pairs.jsonl", "application/x-ndjson", _formatter("preference_pairs_jsonl"), "chunks"),
    ExportFormat("consensus", "Consensus table (CSV)", "Per output: each criterion's consensus with its 95% CI "
                 "(or majority label), group scores and the overall with its CI; an output rated by fewer raters than "
                 "the study's consensus minimum has one left_out row with its rater count instead.",
                 ".consensus.csv", "text/csv; charset=utf-8", _formatter("consensus_csv"), "chunks"),
    ExportFormat("hf", "Hugging Face dataset (zip)", "A folder `datasets.load_dataset` opens once unzipped: the "
                 "ratings as Parquet and a dataset card (README.md) whose YAML names the license chosen at release, "
                 "the task and the size, with the rubric and the raters' agreement.",
                 ".hf.zip", "application/zip", _formatter("huggingface_zip"), "rows"),
    ExportFormat("hf-full", "Hugging Face dataset with what was rated (zip)", "The Hugging Face folder with four "
                 "configs: the ratings, the items and outputs (context, output text, system, kind), the consensus "
                 "with its method (a rater model's labels and posteriors beside the majority) and each rater's "
                 "estimates; the card adds the methods paragraph. `load_dataset(folder, \"items\")` opens one.",
                 ".hf-full.zip", "application/zip", _formatter("huggingface_full_zip"), "rows"),
    ExportFormat("items-parquet", "Items and outputs (Parquet)", "What was rated, one row per output: item, "
                 "context, output, system, kind, text, attention-check flag; joins the ratings on (item, output).",
                 ".items.parquet", "application/vnd.apache.parquet", _formatter("items_parquet"), "items"),
    ExportFormat("items-jsonl", "Items and outputs (JSONL)", "The same, one JSON object per line.",
                 ".items.jsonl", "application/x-ndjson", _formatter("items_jsonl"), "items"),
    ExportFormat("consensus-parquet", "Consensus with its method (Parquet)", "The consensus table with a `method` "
                 "column (mean, majority, rubric weights, or the rater model chosen for a label criterion, whose "
                 "label and posterior stand beside the majority).",
                 ".consensus.parquet", "application/vnd.apache.parquet", _formatter("consensus_parquet"), "chunks"),
    ExportFormat("consensus-jsonl", "Consensus with its method (JSONL)", "The same, one JSON object per line.",
                 ".consensus.jsonl", "application/x-ndjson", _formatter("consensus_jsonl"), "chunks"),
    ExportFormat("raters-parquet", "Rater estimates (Parquet)", "One row per rater and criterion: the rater "
                 "model's estimates (accuracy and MACE competence on labels, bias and noise on scales) beside "
                 "agreement, and why the report names the rater to check, if it does.",
                 ".raters.parquet", "application/vnd.apache.parquet", _formatter("raters_parquet"), "chunks"),
)}


def export_chunks(study: Study, fmt: str, **options: Any) -> Iterator[bytes]:
    """The export's bytes; options: delta and dataset_version (pairs), progress(n) callback."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}")
    return FORMATS[fmt].formatter(study, **options)


def export_to_file(study: Study, fmt: str, path: str | Path, *, overwrite: bool = True, **options: Any) -> Written:
    return write_file(export_chunks(study, fmt, **options), path, overwrite=overwrite)


def export_filename(study: Study, fmt: str, version: str | None = None) -> str:
    return f"{study.slug}{'-' + version if version else ''}{FORMATS[fmt].extension}"
