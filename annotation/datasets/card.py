"""A release as a Hugging Face dataset folder, zipped: `README.md` (the dataset card: YAML metadata,
then prose) and `data/ratings.parquet`. Unzipped, `datasets.load_dataset(folder)` opens it; the card's
YAML names the license chosen at release, the task, the size bucket, and where the data files are.
"""

from __future__ import annotations

import io
import json
import zipfile
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Iterator

from annotation.models import Study
from annotation.services.sampling_policy import policy_methods

# Hugging Face's license identifiers (a subset: the ones that fit a dataset of ratings).
LICENSES: dict[str, str] = {
    "cc-by-4.0": "Creative Commons Attribution 4.0",
    "cc-by-sa-4.0": "Creative Commons Attribution-ShareAlike 4.0",
    "cc-by-nc-4.0": "Creative Commons Attribution-NonCommercial 4.0",
    "cc0-1.0": "Creative Commons Zero 1.0 (public domain)",
    "odc-by": "Open Data Commons Attribution",
    "mit": "MIT",
    "apache-2.0": "Apache 2.0",
    "other": "Other (see the card)",
}
# The Hub's size_categories buckets: (upper bound, label).
SIZE_BUCKETS = [(1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"), (1_000_000, "100K<n<1M"),
                (10_000_000, "1M<n<10M"), (100_000_000, "10M<n<100M"), (1_000_000_000, "100M<n<1B")]
DATA_FILE = "data/ratings.parquet"
FIXED_TIME = (1980, 1, 1, 0, 0, 0)  # zip entries without wall-clock times: the same ratings give the same bytes


def size_category(n_rows: int) -> str:
    return next((label for bound, label in SIZE_BUCKETS if n_rows < bound), "n>1T")


def task_categories(rubric: dict[str, Any]) -> list[str]:
    """A rubric of labels only (e.g. seed 003's TP/FP3/FP2/FP1) is text classification; scales and
    comparisons rate generated text."""
    kinds = {c["kind"] for c in rubric["criteria"]}
    return ["text-classification"] if kinds <= {"choice", "binary"} else ["text-generation", "text-classification"]


def _yaml_str(value: str) -> str:
    return json.dumps(value, ensure_ascii=False)  # a JSON string is a valid YAML scalar


def _fmt(value: Any) -> str:
    return "—" if value is None else f"{value:.3f}"


def card_text(*, study: Study, version: str, license: str, n_rows: int, agreement: dict[str, Any],
              changelog: str = "", tables: list[Table] | None = None, methods: str = "") -> str:
    """The dataset card: YAML front matter the Hub and `datasets` read, then what a reader needs.
    With `tables` (a release with what was rated) each table is a config of its own, the first the
    default, and the card describes them and ends with the study's methods paragraph."""
    rubric = study.rubric
    if tables:
        configs = [line for i, t in enumerate(tables) for line in (
            f"- config_name: {t.config}", *(["  default: true"] if i == 0 else []),
            "  data_files:", "  - split: train", f"    path: {t.path}")]
    else:
        configs = ["- config_name: default", "  data_files:", "  - split: train", f"    path: {DATA_FILE}"]
    lines = [
        "---",
        f"license: {license or 'other'}",
        f"pretty_name: {_yaml_str(study.name)}",
        "task_categories:", *[f"- {t}" for t in task_categories(rubric)],
        "tags:", "- human-evaluation", "- llm-as-a-judge", "- concord",
        "size_categories:", f"- {size_category(n_rows)}",
        "configs:", *configs,
        "---", "",
        f"# {study.name}", "",
        f"Version {version} of the ratings of the Concord study `{study.slug}`: {n_rows} ratings in the long format "
        "(one row per rating: item, output, system, rater, criterion, value, score, reasoning, spans, …)"
        + (", with what was rated and the consensus in tables of their own." if tables else "."), "",
        f"- **License**: {LICENSES.get(license, license or 'not chosen (a live export, not a release)')}",
        f"- **Rubric**: {rubric.get('name', '')} (`{rubric.get('slug', '')}`, version {study.rubric_version.version})",
        f"- **Raters per item**: {study.raters_per_item}; {_design(study)}; system names hidden from the raters.",
    ]
    if design := policy_methods(study):  # the columns sampling and sampling_probability say how each was drawn
        lines.append(f"- **Sampling policy**: {design}")
    if changelog:
        lines.append(f"- **Changes**: {changelog}")
    lines += ["", "## Rubric", "", "| criterion | kind | scale or labels |", "|---|---|---|"]
    for c in rubric["criteria"]:
        lines.append(f"| {c.get('name', c['key'])} (`{c['key']}`) | {c['kind']} | {_scale(c).replace('|', '/')} |")
    lines += ["", "## Agreement between the raters", "",
              "Krippendorff's α at the criterion's level and ICC(1) with 95% bootstrap intervals over items, as in "
              "the study report.", "",
              "| criterion | units | raters | α | α 95% CI | ICC(1) | ICC(1) 95% CI |", "|---|---|---|---|---|---|---|"]
    for key, a in agreement.items():
        alpha, icc1 = a.get("alpha") or {}, a.get("icc1") or {}
        lines.append(f"| `{key}` | {a.get('n_units')} | {a.get('n_raters')} | {_fmt(alpha.get('value'))} | "
                     f"{_ci(alpha)} | {_fmt(icc1.get('value'))} | {_ci(icc1)} |")
    if not agreement:
        lines.append("| (no ratings yet) | | | | | | |")
    if tables:
        lines += ["", "## Tables", "", "| config | file | rows | what a row is |", "|---|---|---|---|"]
        lines += [f"| `{t.config}` | `{t.path}` | {t.rows()} | {t.description} |" for t in tables]
        lines += ["", "## Methods", "", methods or "(no ratings yet)"]
        lines += ["", "## Loading", "", "```python", "from datasets import load_dataset", ""]
        lines += [f"{t.config} = load_dataset(\"path/to/this/folder\", \"{t.config}\")[\"train\"]" for t in tables]
        lines += ["```", ""]
        return "\n".join(lines)
    lines += ["", "## Loading", "", "```python", "from datasets import load_dataset", "",
              "ratings = load_dataset(\"path/to/this/folder\")[\"train\"]", "```", ""]
    return "\n".join(lines)


@dataclass
class Table:
    """One table of a release with what was rated: its config name, its file in the folder, what a
    row is, and its row count (known once the file is written)."""
    config: str
    path: str
    description: str
    count: list[int] = field(default_factory=lambda: [0])

    def rows(self) -> int:
        return self.count[0]

    def counted(self, batches: Iterable[Any]) -> Iterator[Any]:
        for batch in batches:
            self.count[0] += batch.num_rows
            yield batch


def _design(study: Study) -> str:
    order = [what for what, on in (("items", study.randomize_items), ("outputs", study.randomize_outputs)) if on]
    shown = f"{' and '.join(order)} shown in random order" if order else "items and outputs in a fixed order"
    return shown + (", positions counterbalanced" if study.counterbalance else "")


def _scale(criterion: dict[str, Any]) -> str:
    if "min" in criterion and "max" in criterion:
        return f"{criterion['min']}–{criterion['max']}"
    if criterion.get("choices"):
        return ", ".join(str(c.get("value")) for c in criterion["choices"])
    return ", ".join(map(str, criterion.get("labels") or []))


def _ci(stat: dict[str, Any]) -> str:
    ci = stat.get("bootstrap_ci") or stat.get("ci")
    return f"[{ci[0]:.3f}, {ci[1]:.3f}]" if ci else "—"


class _Sink(io.RawIOBase):
    """An unseekable file the zip writes into; its bytes are taken out as they come."""

    def __init__(self) -> None:
        self._parts: list[bytes] = []
        self._written = 0

    def writable(self) -> bool:
        return True

    def write(self, data) -> int:
        self._parts.append(bytes(data))
        self._written += len(data)
        return len(data)

    def tell(self) -> int:
        return self._written

    def drain(self) -> bytes:
        data, self._parts = b"".join(self._parts), []
        return data


def hf_zip(files: Iterable[tuple[str, Iterable[bytes]]], card: Callable[[int], str],
           count: Callable[[], int]) -> Iterator[bytes]:
    """The zip's bytes as they are made: each (path, Parquet chunks) streamed in, in order (stored:
    they are compressed already), then the card, written once `count()` knows the number of ratings."""
    sink = _Sink()
    with zipfile.ZipFile(sink, "w", allowZip64=True) as zf:
        for path, chunks in files:
            with zf.open(zipfile.ZipInfo(path, FIXED_TIME), "w", force_zip64=True) as entry:
                for chunk in chunks:
                    entry.write(chunk)
                    if data := sink.drain():
                        yield data
        info = zipfile.ZipInfo("README.md", FIXED_TIME)
        info.compress_type = zipfile.ZIP_DEFLATED
        zf.writestr(info, card(count()))
    yield sink.drain()
