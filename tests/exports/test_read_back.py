"""Every file Concord writes, read back by what takes that kind of data, gives the stored study's figures.

- export_study csv / jsonl / parquet and a parquet release: `agreement FILE` gives the report's agreement (JSON
  and CSV); `consensus FILE` gives what `consensus SLUG` gives from the stored ratings.
- a Hugging Face release opened by `datasets`, saved as CSV: `agreement` gives the report's alpha.
- consensus-parquet and raters-parquet (`Client.consensus`, `Client.rater_estimates`), read by pandas: the
  report's consensus rows and rater models.
- a comparative study's csv / jsonl / parquet export and the client's comparisons table: `comparisons FILE
  --criterion KEY` gives the report's Comparisons section.
- a comparative study's pairs: `comparisons FILE` gives the stored answers' win matrix less the pairs split
  evenly (which are no pair).
"""

from __future__ import annotations

import csv
import io
import json
import os
import zipfile

import pandas as pd
import pytest
from django.core.management import CommandError, call_command
from django.test import Client
from django.urls import reverse

from annotation.datasets import export_chunks, export_to_file
from annotation.datasets.releases import release_build, release_path, releases_create
from annotation.models import Output, StudyMember
from annotation.reports.comparisons import as_comparisons, comparative_answers
from annotation.reports.ratings import copy_ratings
from annotation.simulation.study import simulated_study_create
from annotation.stats import comparisons as cmp
from annotation.stats.comparison_files import matrix_report

pytestmark = pytest.mark.django_db
LONG_FORMATS = ("csv", "jsonl", "parquet")


def _run(*args) -> dict:
    out = io.StringIO()
    call_command(*args, "--json", stdout=out)
    return json.loads(out.getvalue())


def _body(response) -> bytes:
    return b"".join(response.streaming_content) if response.streaming else response.content


def _report(study, user, download: str) -> bytes:
    client = Client()
    client.force_login(user)
    response = client.get(reverse("report", args=[study.slug]), {"download": download})
    assert response.status_code == 200
    return _body(response)


def _close(got, want, path="") -> None:
    """Equal trees, numbers to 1e-9 (sums in another order), None as None."""
    if isinstance(want, dict):
        assert isinstance(got, dict) and set(got) == set(want), (path, sorted(got), sorted(want))
        for k in want:
            _close(got[k], want[k], f"{path}.{k}")
    elif isinstance(want, (list, tuple)):
        assert len(got) == len(want), path
        for k, (g, w) in enumerate(zip(got, want)):
            _close(g, w, f"{path}[{k}]")
    elif isinstance(want, float) and not isinstance(got, str):
        assert got == pytest.approx(want, rel=1e-9, abs=1e-12), path
    else:
        assert got == want, path


@pytest.fixture(autouse=True)
def media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"


# ------------------------------------------------------------------------------------------ ratings


def test_agreement_and_consensus_read_each_long_export_with_the_stored_studys_figures(rated_study, researcher,
                                                                                      tmp_path):
    report = json.loads(_report(rated_study, researcher, "json"))["agreement"]
    assert "decision" in report
    stored = {m: _run("consensus", rated_study.slug, "--method", m) for m in ("dawid-skene",)}
    for fmt in LONG_FORMATS:
        path = export_to_file(rated_study, fmt, tmp_path / f"ratings.{fmt}").path
        got = _run("agreement", str(path))["criteria"]
        assert set(report) <= set(got), fmt  # (the export's confidence rows: not in the report)
        for key, entry in report.items():
            want = {k: v for k, v in entry["details"].items() if k != "judges"}
            # (`labels`: the file's text labels, which the report codes by the rubric's order)
            _close({k: v for k, v in got[key].items() if k not in ("judges", "labels")}, want, f"{fmt} {key}")
        for method, want in stored.items():
            from_file = _run("consensus", str(path), "--method", method)
            assert from_file["file"] == str(path) and want["study"] == rated_study.slug
            _same_consensus(from_file["criteria"], want["criteria"])
    # the report's CSV holds the same figures as its JSON
    rows = list(csv.reader(io.StringIO(_report(rated_study, researcher, "csv").decode())))
    alpha = {r[1]: float(r[4]) for r in rows if r[0] == "agreement" and r[3] == "krippendorff_alpha.nominal"}
    assert alpha["decision"] == pytest.approx(got["decision"]["krippendorff_alpha"]["nominal"], rel=1e-9)


def _same_consensus(got: list[dict], want: list[dict]) -> None:
    assert sorted(c["criterion"] for c in got) == sorted(c["criterion"] for c in want) and want
    got_by = {c["criterion"]: c for c in got}
    for w in want:
        g = got_by[w["criterion"]]
        assert g["method"] == w["method"], g["criterion"]
        by_unit = {(u["item"], u["output"]): u for u in g["units"]}
        assert len(by_unit) == len(w["units"])
        for u in w["units"]:
            _close(by_unit[(u["item"], u["output"])], u, f"{g['criterion']} {u['item']}#{u['output']}")
        by_rater = {r["rater"]: r for r in g["raters"]}
        for r in w["raters"]:
            _close(by_rater[r["rater"]], r, f"{g['criterion']} {r['rater']}")
        for k in ("log_likelihood", "bic", "bias_sd", "noise_sd"):
            if k in w:
                _close(g[k], w[k], k)


def test_a_release_file_reads_back_as_the_export_does(rated_study, tmp_path):
    (release,) = [release_build(release_id=r.pk) for r in
                  releases_create(study=rated_study, version="1.0.0", formats=["parquet"])]
    assert release.status == "ready"
    stored = _run("consensus", rated_study.slug, "--method", "dawid-skene")
    _same_consensus(_run("consensus", str(release_path(release)), "--method", "dawid-skene")["criteria"],
                    stored["criteria"])


def test_the_hugging_face_release_opened_by_datasets_reads_back(rated_study, researcher, tmp_path):
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
    import datasets

    (release,) = [release_build(release_id=r.pk) for r in releases_create(
        study=rated_study, version="1.0.0", formats=["hf"], license="cc-by-4.0")]
    folder = tmp_path / "hf"
    with zipfile.ZipFile(release_path(release)) as zf:
        zf.extractall(folder)
    frame = datasets.load_dataset(str(folder), cache_dir=str(tmp_path / "cache"))["train"].to_pandas()
    path = tmp_path / "from-datasets.csv"
    frame.to_csv(path, index=False)  # what a researcher saves from the loaded dataset
    got = _run("agreement", str(path))["criteria"]
    report = json.loads(_report(rated_study, researcher, "json"))["agreement"]
    for key, entry in report.items():
        _close(got[key]["krippendorff_alpha"], entry["details"]["krippendorff_alpha"], key)


def test_the_clients_consensus_and_rater_tables_hold_the_reports_figures(rated_study, researcher):
    """Client.consensus(slug) and Client.rater_estimates(slug) are the consensus-parquet and raters-parquet
    exports, read by pandas."""
    client = Client()
    client.force_login(researcher)

    def table(fmt: str) -> pd.DataFrame:
        response = client.get(reverse("api-study-export", args=[rated_study.slug]), {"file": fmt})
        assert response.status_code == 200
        return pd.read_parquet(io.BytesIO(_body(response)))

    report = json.loads(_report(rated_study, researcher, "json"))
    estimates = {(r.rater, r.criterion): r for r in table("raters-parquet").itertuples()}
    criteria = report["rater_models"]["criteria"]
    assert criteria
    for key, c in criteria.items():
        for r in c["raters"]:
            mine = estimates[(r["rater"], key)]
            assert mine.method == c["method"]
            for name in ("n", "agreement", "distance", "accuracy", "competence", "bias", "noise_sd"):
                if r.get(name) is not None:
                    assert getattr(mine, name) == pytest.approx(r[name], rel=1e-12), (key, r["rater"], name)
    rows = report["consensus"]["rows"]
    table = table("consensus-parquet")
    assert rows
    got = {(r.item, r.output, r.level, r.criterion): r for r in table.itertuples()}
    for row in rows:
        for key, c in row["criteria"].items():
            mine = got[(row["item"], row["output"], "criterion", key)]
            if "consensus" in c:
                assert mine.consensus == pytest.approx(c["consensus"], rel=1e-12), (row["item"], key)
            else:
                assert mine.majority == c["majority"] and mine.share == pytest.approx(c["share"], rel=1e-12)
        overall = got[(row["item"], row["output"], "overall", "overall")]
        assert overall.consensus == pytest.approx(row["overall"], rel=1e-12)


def test_consensus_from_a_file_names_what_is_wrong(tmp_path):
    path = tmp_path / "bad.csv"
    path.write_text("item,rater,score\na,r1,4\na,r1,5\n")
    with pytest.raises(CommandError, match=r"row 3, column 'rater': rater 'r1' rated 'a' on 'score' twice"):
        _run("consensus", str(path))
    path.write_text("item,rater,score,criterion\na,r1,4,q\n")
    with pytest.raises(CommandError, match=r"--criterion 'nope' is not in the file; it has q"):
        _run("consensus", str(path), "--criterion", "nope")
    with pytest.raises(CommandError, match="no such file"):
        _run("consensus", str(tmp_path / "missing.csv"))


# -------------------------------------------------------------------------------------- comparisons


def _comparative(admin_user, preset: str):
    study = simulated_study_create(preset=preset, slug=f"rb-{preset}", n_items=8, n_raters=4,
                                   admin=admin_user).study
    StudyMember.objects.get_or_create(study=study, user=admin_user, role="researcher")
    return study


@pytest.mark.parametrize("preset, keys", [("compare-pairwise", ["preference"]),
                                          ("compare-ranking", ["order", "best_worst"])])
def test_comparisons_reads_every_file_of_a_comparative_study_with_the_reports_figures(admin_user, tmp_path, preset,
                                                                                        keys):
    study = _comparative(admin_user, preset)
    section = json.loads(_report(study, admin_user, "json"))["comparisons"]
    client = Client()
    client.force_login(admin_user)
    table = tmp_path / "comparisons.parquet"  # Client.comparisons(slug) is this file, read by pandas
    table.write_bytes(client.get(reverse("api-study-comparisons", args=[study.slug])).content)
    files = [export_to_file(study, fmt, tmp_path / f"ratings.{fmt}").path for fmt in LONG_FORMATS]
    for key in keys:
        want = section[key]
        assert want["n_answers"] > 0
        for path in files:
            got = _run("comparisons", str(path), "--criterion", key)
            for part in ("systems", "win_rates", "position", "bws_count"):
                if part in want:
                    _close(got[part], want[part], f"{path} {key} {part}")
            if want.get("kendall_w", {}).get("scope") == "systems":
                _close(got["kendall_w"], {k: v for k, v in want["kendall_w"].items() if k != "scope"}, "W")
        got = _run("comparisons", str(table), "--criterion", key)
        _close(got["systems"], want["systems"], f"client table {key}")
    if preset == "compare-pairwise":
        _pairs_read_back(study, keys[0], tmp_path)


def _pairs_read_back(study, key: str, tmp_path) -> None:
    """The pairs carry each side's share and count: the stored answers' win matrix less the item pairs
    split evenly (no pair in the file)."""
    got = _run("comparisons", str(export_to_file(study, "pairs", tmp_path / "pairs.jsonl").path))
    answers = comparative_answers(study, [key])
    shares = cmp.item_pair_shares([((a.item_id, a.item), w) for a in answers
                                   for w in as_comparisons([a], a.kind).wins])
    wins = [w for (item, a, b), (won, n) in shares.items() if won * 2 != n
            for w in ((a, b, won), (b, a, n - won))]
    want = matrix_report("pairwise", *cmp.win_matrix(wins))
    assert "share" in got["source"]
    _close(got["systems"], want["systems"], "pairs systems")
    _close(got["win_rates"], want["win_rates"], "pairs win_rates")


def test_the_export_names_each_shown_output_by_system_and_an_old_export_is_refused(admin_user, tmp_path):
    study = _comparative(admin_user, "compare-pairwise")
    key = "preference"
    path = export_to_file(study, "csv", tmp_path / "ratings.csv").path
    rows = list(csv.DictReader(open(path)))
    systems = dict(Output.objects.filter(item__study=study).values_list("pk", "system"))
    answers = [r for r in rows if r["criterion"] == key]
    assert answers
    for r in answers:
        value = json.loads(r["value"])
        assert len(value["shown"]) == 2 and value["systems"] == [systems[i] for i in value["shown"]]
    # the JSON lines export (written in Arrow) is byte for byte the reference query's, systems included
    assert b"".join(export_chunks(study, "jsonl")) == b"".join(copy_ratings(study, fmt="jsonl"))
    with pytest.raises(CommandError, match=r"column 'criterion'.*--criterion 'nope' has no comparative answers"):
        _run("comparisons", str(path), "--criterion", "nope")
    first = rows.index(answers[0])
    value = json.loads(rows[first]["value"])
    del value["systems"]  # an export from before the systems were written
    rows[first]["value"] = json.dumps(value)
    old = tmp_path / "old.csv"
    with open(old, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    with pytest.raises(CommandError, match=rf"row {first + 2}, column 'value': the answer has no `systems`"):
        _run("comparisons", str(old), "--criterion", key)
