"""Paper-ready output of a study report: every table as LaTeX (booktabs) and Markdown, every plot
as SVG, PDF and 300-dpi PNG, and a methods paragraph with the study's design and numbers.

Tables are pandas frames built from the report dict, written by pandas' own LaTeX (Styler,
booktabs rules) and Markdown (tabulate) writers; plots are the report's own matplotlib figures,
kept while the report draws them (plots.captured_figures). Same report, same bytes.
"""

from __future__ import annotations

import io
import re
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import matplotlib
import pandas as pd
from matplotlib.figure import Figure

from annotation.models import Study
from annotation.reports.plots import captured_figures, report_plots

FIGURE_FORMATS = ("svg", "pdf", "png")
PNG_DPI = 300
FIXED_TIME = (1980, 1, 1, 0, 0, 0)


@dataclass(frozen=True)
class Table:
    name: str
    caption: str
    frame: pd.DataFrame


def _num(value: Any) -> float | None:
    return None if value is None else float(value)


def _ci(ci: Any) -> str:
    return f"[{ci[0]:.3f}, {ci[1]:.3f}]" if ci else "—"


def _names(report: dict[str, Any]) -> dict[str, str]:
    return {c["key"]: c["name"] for c in report.get("criteria", [])} | {"combined": "Combined (overall)"}


def report_tables(report: dict[str, Any]) -> list[Table]:
    """Every table of the report that has rows: agreement, systems, accept rates, raters, position
    effects and, for comparative questions, Bradley–Terry strengths."""
    names = _names(report)
    tables: list[Table] = []
    level = report.get("settings", {}).get("ci_level", 0.95)
    pct = f"{level:.0%}"
    rows = []
    for key, a in report.get("agreement", {}).items():
        alpha, icc1 = a.get("alpha") or {}, a.get("icc1") or {}
        rows.append({"Criterion": names.get(key, key), "Units": a.get("n_units"), "Raters": a.get("n_raters"),
                     "Ratings": a.get("n_ratings"), "Level": a.get("alpha_level"), "α": _num(alpha.get("value")),
                     f"α {pct} CI": _ci(alpha.get("bootstrap_ci") or alpha.get("ci")),
                     "ICC(1)": _num(icc1.get("value")), f"ICC(1) {pct} CI": _ci(icc1.get("bootstrap_ci") or icc1.get("ci"))})
    if rows:
        tables.append(Table("agreement", f"Inter-rater agreement per criterion (units: outputs; {pct} bootstrap "
                                         "intervals over items).", pd.DataFrame(rows)))
    rows = []
    for key, c in report.get("systems", {}).get("criteria", {}).items():
        for system, s in sorted(c.get("systems", {}).items(), key=lambda kv: -(kv[1].get("mean") or 0)):
            rows.append({"Criterion": names.get(key, key), "System": system, "Mean": _num(s.get("mean")),
                         f"{pct} CI": _ci(s.get("ci")), "Items": s.get("n_items")})
    if rows:
        tables.append(Table("systems", f"Mean rating per system (mean of each output's raters; t-based {pct} "
                                       "intervals over items).", pd.DataFrame(rows)))
    accept = report.get("systems", {}).get("accept_rate", {})
    rows = [{"Criterion": names.get(key, key), "System": system, f"Share {per['value']}": _num(rate)}
            for key, per in accept.items() for system, rate in sorted(per["systems"].items())]
    if rows:
        tables.append(Table("accept_rate", "Share of the ratings of each system's outputs giving the first answer "
                                           "(e.g. ACCEPT).", pd.DataFrame(rows)))
    rows = []
    for rater, r in report.get("raters", {}).items():
        if not isinstance(r, dict):
            continue
        rows.append({"Rater": rater, "Ratings": r.get("n_ratings"), "Bias": _num(r.get("bias")),
                     "r vs others": _num(r.get("pearson_vs_others")), "MAE vs others": _num(r.get("mae_vs_others")),
                     "Flags": ", ".join(r.get("flags") or []) or "—"})
    if rows:
        tables.append(Table("raters", "Raters: mean deviation from the other raters (bias), correlation and mean "
                                      "absolute error against them.", pd.DataFrame(rows)))
    rows = []
    for key, per in report.get("position_effects", {}).items():
        for position, e in per.items():
            rows.append({"Criterion": names.get(key, key), "Position shown": int(position),  # the report counts from 1
                         "Mean": _num(e.get("mean")), f"{pct} CI": _ci(e.get("ci")), "Ratings": e.get("n")})
    if rows:
        tables.append(Table("positions", f"Mean rating by the position an output was shown in ({pct} t intervals).",
                            pd.DataFrame(rows)))
    rows = []
    for key, c in report.get("comparisons", {}).items():
        for system, s in sorted((c.get("systems") or {}).items(), key=lambda kv: -(kv[1].get("bt") or -1e9)):
            rows.append({"Question": names.get(key, key), "System": system, "BT log-strength": _num(s.get("bt")),
                         "95% CI": _ci(s.get("bt_ci")), "Judgements": s.get("n")})
    if rows:
        tables.append(Table("comparisons", "Bradley–Terry log-strengths (maximum likelihood, centred to mean 0) "
                                           "with 95% Wald intervals.", pd.DataFrame(rows)))
    return tables


def table_latex(table: Table, study_slug: str) -> str:
    """A booktabs table (\\toprule, \\midrule, \\bottomrule; needs \\usepackage{booktabs})."""
    numeric = [c for c in table.frame.columns if pd.api.types.is_float_dtype(table.frame[c])]
    styler = (table.frame.style.hide(axis="index")
              .format(precision=3, na_rep="—", escape="latex")
              .format(precision=3, na_rep="—", subset=numeric)
              .format_index(escape="latex", axis=1))
    latex = styler.to_latex(hrules=True, caption=table.caption.replace("%", r"\%"), position_float="centering",
                            label=f"tab:{study_slug}-{table.name}", column_format=_columns(table.frame))
    return _latex_symbols(latex)


def _latex_symbols(text: str) -> str:
    """Characters pdfLaTeX has no glyph for, as LaTeX."""
    return text.replace("α", r"$\alpha$").replace("—", "---").replace("–", "--")


def _columns(frame: pd.DataFrame) -> str:
    return "".join("r" if pd.api.types.is_numeric_dtype(frame[c]) else "l" for c in frame.columns)


def table_markdown(table: Table) -> str:
    return f"{table.caption}\n\n" + table.frame.to_markdown(index=False, floatfmt=".3f", missingval="—") + "\n"


def _latex_escape(text: str) -> str:
    out = "".join({"&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_", "{": r"\{", "}": r"\}",
                   "~": r"\textasciitilde{}", "^": r"\^{}", "\\": r"\textbackslash{}"}.get(ch, ch) for ch in text)
    return _latex_symbols(out)


def figure_bytes(fig: Figure, fmt: str, name: str) -> bytes:
    """SVG, PDF or 300-dpi PNG, without creation dates and with ids salted by the plot's name
    (the same report gives the same bytes)."""
    buf = io.BytesIO()
    metadata = {"svg": {"Date": None}, "pdf": {"CreationDate": None, "ModDate": None}, "png": {}}[fmt]
    with matplotlib.rc_context({"svg.hashsalt": name}):
        fig.savefig(buf, format=fmt, dpi=PNG_DPI if fmt == "png" else "figure", bbox_inches="tight",
                    metadata=metadata)
    return buf.getvalue()


def slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


def study_paper_files(study: Study, *, web: bool = False, only: str | None = None) -> dict[str, bytes]:
    """The paper kit of the study's current report: the plots of the report page and of the other
    apps' sections (judges), kept while they are drawn. `only`: that one file (none if it is not in
    the kit), without rendering the others."""
    from annotation.reports.downloads import report_with_sections

    with captured_figures() as kept:
        report, _sections = report_with_sections(study, web=web)
        report_plots(report)
    return paper_files(study, report, {slug(name): fig for name, fig in kept.items()}, only=only)


def paper_files(study: Study, report: dict[str, Any], figures: dict[str, Figure], *,
                only: str | None = None) -> dict[str, bytes]:
    """Every file of the paper kit by its path in the zip, or only the one named `only`: a figure in
    three formats at 300 dpi costs far more than the file asked for."""
    from annotation.reports.methods import methods_paragraph

    files: dict[str, bytes] = {}

    def add(path: str, render: Callable[[], bytes]) -> None:
        if only is None or path == only:
            files[path] = render()

    for table in report_tables(report):
        add(f"tables/{table.name}.tex", lambda t=table: table_latex(t, study.slug).encode())
        add(f"tables/{table.name}.md", lambda t=table: table_markdown(t).encode())
    for name, fig in sorted(figures.items()):
        for fmt in FIGURE_FORMATS:
            add(f"figures/{name}.{fmt}", lambda f=fig, fm=fmt, n=name: figure_bytes(f, fm, n))
    if only is None or only.startswith("methods."):
        text = methods_paragraph(study, report)
        add("methods.md", lambda: (text + "\n").encode())
        add("methods.tex", lambda: (_latex_escape(text) + "\n").encode())
    return files


def paper_zip(files: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for path, data in sorted(files.items()):
            zf.writestr(zipfile.ZipInfo(path, FIXED_TIME), data, compress_type=zipfile.ZIP_DEFLATED)
    return buf.getvalue()
