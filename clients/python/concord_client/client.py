"""`Client(url, token)`: Concord's REST API for scripts and notebooks.

Every method is one or a few requests; a refused request raises ConcordError with the server's
message. Tables come from the server's Parquet exports, so each column keeps its type (item ids
and systems stay strings, positions integers, timestamps UTC) as pandas' nullable dtypes.
"""

from __future__ import annotations

import hashlib
import io
import json
import sys
import time
import zipfile
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pandas as pd
import pyarrow.parquet as pq

from concord_client import trajectories
from concord_client.errors import ConcordError

Progress = Callable[[dict[str, Any]], None]
FINISHED = {"done", "cancelled", "failed"}


class ReleaseChecksumError(ConcordError):
    """The downloaded release's SHA-256 is not the one the server recorded; the file was removed."""


def print_progress(run: dict[str, Any]) -> None:
    """The default progress display of `wait_for_run`: one line on stderr per change."""
    p = run.get("progress") or {}
    expected, done = p.get("expected") or 0, p.get("done") or 0
    share = f" ({100 * done / expected:.0f}%)" if expected else ""
    eta = f", about {p['eta_s']:.0f} s left" if p.get("eta_s") else ""
    print(f"run {run['id']} {run['status']}: {done}/{expected}{share}{eta}", file=sys.stderr, flush=True)


class Client:
    """A session with one Concord server, authenticated by an API token.

    >>> client = Client("http://127.0.0.1:8000", token="...")   # manage.py drf_create_token USER
    >>> client.ratings("demo-rrgen-001").head()
    """

    def __init__(self, url: str, token: str, *, timeout: float = 60.0,
                 transport: httpx.BaseTransport | None = None):
        self.url = url.rstrip("/")
        self._http = httpx.Client(base_url=self.url, headers={"Authorization": f"Token {token}"},
                                  timeout=timeout, transport=transport, follow_redirects=False)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ plumbing

    def _request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        response = self._http.request(method, path, **kwargs)
        if response.status_code >= 400:
            raise ConcordError.from_response(response)
        return response

    def _json(self, method: str, path: str, **kwargs: Any) -> Any:
        return self._request(method, path, **kwargs).json()

    def _pages(self, path: str, params: dict[str, Any] | None = None) -> Iterator[dict[str, Any]]:
        """Every result of a paginated list, following `next`."""
        body = self._json("GET", path, params=params)
        while True:
            if isinstance(body, list):
                yield from body
                return
            yield from body["results"]
            if not body.get("next"):
                return
            body = self._json("GET", body["next"])

    def _frame(self, path: str) -> pd.DataFrame:
        table = pq.read_table(io.BytesIO(self._request("GET", path).content))
        return table.to_pandas(types_mapper=_nullable)

    # ------------------------------------------------------------------ studies

    def studies(self) -> list[dict[str, Any]]:
        """The studies this token may read (admins: all; researchers: theirs)."""
        return list(self._pages("/api/studies/"))

    def study(self, slug: str) -> dict[str, Any]:
        return self._json("GET", f"/api/studies/{slug}/")

    def rubrics(self) -> list[dict[str, Any]]:
        """Every rubric version this token may see, newest version of each rubric first."""
        return list(self._pages("/api/rubrics/"))

    def load_rubric(self, path: str | Path) -> dict[str, Any]:
        """Add a rubric from a YAML or JSON file, or its next version when it changed (admins)."""
        path = Path(path)
        return self._json("POST", "/api/rubrics/file/", files={"file": (path.name, path.read_bytes())})

    def rubric_version(self, slug: str) -> dict[str, Any]:
        """The newest version of the rubric (or preset) `slug`."""
        versions = [v for v in self.rubrics() if v["slug"] == slug]
        if not versions:
            raise ConcordError(404, f"no rubric {slug!r}; presets: {sorted({v['slug'] for v in self.rubrics()})}")
        return max(versions, key=lambda v: v["version"])

    def create_study(self, name: str, *, preset: str | None = None, rubric_file: str | Path | None = None,
                     slug: str | None = None, **options: Any) -> dict[str, Any]:
        """Create a draft study from a built-in preset (e.g. "rrgen-001") or a rubric file (admins).
        `options` are the study's settings: raters_per_item, instructions, randomize_items,
        randomize_outputs, counterbalance, attention_check_rate, presentation."""
        if (preset is None) == (rubric_file is None):
            raise ValueError("give either preset or rubric_file")
        version = self.rubric_version(preset) if preset else self.load_rubric(rubric_file)  # type: ignore[arg-type]
        body = {"name": name, "rubric_version": version["id"], **options, **({"slug": slug} if slug else {})}
        return self._json("POST", "/api/studies/", json=body)

    def upload_items(self, slug: str, items: str | Path | list[dict[str, Any]], *, filename: str | None = None) -> int:
        """Upload items from a JSONL or CSV file (a path), from its text with `filename` naming the
        format, or from a list of item rows (dicts; a trajectory's content may be its dict); all or
        nothing. Returns how many were imported."""
        if isinstance(items, list):
            items, filename = "".join(json.dumps(row) + "\n" for row in items), filename or "items.jsonl"
        if isinstance(items, Path) or (filename is None and Path(items).exists()):
            path = Path(items)
            data, name = path.read_bytes(), filename or path.name
        else:
            if filename is None:
                raise ValueError("give filename (e.g. items.jsonl) with the items' text")
            data, name = str(items).encode(), filename
        return self._json("POST", f"/api/studies/{slug}/items/", files={"file": (name, data)})["imported"]

    def add_members(self, slug: str, usernames: Iterable[str], *, role: str = "annotator") -> list[str]:
        """Add existing users as annotators or researchers; returns the usernames added."""
        body = {"usernames": list(usernames), "role": role}
        return self._json("POST", f"/api/studies/{slug}/members/", json=body)["added"]

    def set_status(self, slug: str, status: str) -> dict[str, Any]:
        """Move the study through its lifecycle: open, paused, closed."""
        return self._json("POST", f"/api/studies/{slug}/status/", json={"status": status})

    def progress(self, slug: str) -> dict[str, Any]:
        return self._json("GET", f"/api/studies/{slug}/progress/")

    # ------------------------------------------------------------------ judges

    def judges(self) -> list[dict[str, Any]]:
        return list(self._pages("/api/judges/configs/"))

    def judge_runs(self, slug: str) -> list[dict[str, Any]]:
        return list(self._pages("/api/judges/runs/", {"study": slug}))

    def judge_run(self, run_id: int) -> dict[str, Any]:
        return self._json("GET", f"/api/judges/runs/{run_id}/")

    def start_judge_run(self, slug: str, judge: str) -> dict[str, Any]:
        """Start a run of the judge configuration `judge` on every item of the study (admins)."""
        return self._json("POST", "/api/judges/runs/", json={"study": slug, "judge": judge})

    def wait_for_run(self, run_id: int, *, poll_s: float = 1.0, timeout_s: float | None = None,
                     progress: Progress | None = print_progress) -> dict[str, Any]:
        """Poll the run until it is done, cancelled or failed; `progress(run)` is called whenever its
        count changes (None: quiet). Raises TimeoutError after `timeout_s`."""
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        seen = None
        while True:
            run = self.judge_run(run_id)
            state = (run["status"], (run.get("progress") or {}).get("done"))
            if progress is not None and state != seen:
                progress(run)
                seen = state
            if run["status"] in FINISHED:
                return run
            if deadline is not None and time.monotonic() > deadline:
                raise TimeoutError(f"run {run_id} still {run['status']} after {timeout_s} s")
            time.sleep(poll_s)

    def run_judge(self, slug: str, judge: str, *, wait: bool = True, **wait_options: Any) -> dict[str, Any]:
        """Start a judge run and (by default) wait for it with progress."""
        run = self.start_judge_run(slug, judge)
        return self.wait_for_run(run["id"], **wait_options) if wait else run

    # ------------------------------------------------------------------ data

    def ratings(self, slug: str) -> pd.DataFrame:
        """Every rating in the long format (one row per rating), from the Parquet export."""
        return self._frame(f"/api/studies/{slug}/export/?file=parquet")

    def judge_scores(self, slug: str) -> pd.DataFrame:
        """Every judge score of every run of the study (`run`, `judge`, `item`, `output`, `system`,
        `criterion`, `value` as JSON text, `score`, `status`…)."""
        return self._frame(f"/api/judges/studies/{slug}/scores/")

    def comparisons(self, slug: str) -> pd.DataFrame:
        """Every comparative answer (pairwise, ranking, best–worst): systems by name in the order shown."""
        return self._frame(f"/api/studies/{slug}/comparisons/")

    def items(self, slug: str) -> pd.DataFrame:
        """What was rated, one row per output: `item`, `context`, `output`, `system`, `kind`, `content`,
        `is_attention_check`; joins `ratings` on (item, output)."""
        return self._frame(f"/api/studies/{slug}/export/?file=items-parquet")

    def trajectories(self, slug: str) -> pd.DataFrame:
        """The study's trajectory outputs, one row each, with `trajectory` parsed (a dict of
        messages, as stored: model names and trace ids included) and `steps` (trajectories.steps)."""
        items = self.items(slug)
        rows = items[items["kind"] == "trajectory"].copy()
        rows["trajectory"] = [trajectories.parse(c) for c in rows["content"]]
        rows["steps"] = [trajectories.steps(t) for t in rows["trajectory"]]
        return rows.reset_index(drop=True)

    def consensus(self, slug: str) -> pd.DataFrame:
        """The consensus per output and criterion with the `method` that made it; on a label criterion the
        rater model's `label` and its `posterior` beside the raters' `majority`."""
        return self._frame(f"/api/studies/{slug}/export/?file=consensus-parquet")

    def rater_estimates(self, slug: str) -> pd.DataFrame:
        """Each rater's estimates per criterion (`accuracy`, `competence` on labels; `bias`, `noise_sd` on
        scales) beside `agreement` or `distance`, and `to_check`: why the report names them, if it does."""
        return self._frame(f"/api/studies/{slug}/export/?file=raters-parquet")

    def report(self, slug: str, *, wait_s: float = 600.0) -> dict[str, Any]:
        """The study report as a dict: the report page's JSON download. A large study's report is
        computed by a worker: this waits for it (the server's Retry-After), up to `wait_s`."""
        deadline = time.monotonic() + wait_s
        while True:
            response = self._request("GET", f"/api/studies/{slug}/report/")
            if response.status_code != 202:
                return response.json()
            pause = float(response.headers.get("Retry-After", "5"))
            if time.monotonic() + pause > deadline:
                raise ConcordError(202, f"still being computed after waiting {wait_s:.0f} s: {response.text}",
                                   url=str(response.url))
            time.sleep(pause)

    # ------------------------------------------------------------------ releases

    def releases(self, slug: str) -> list[dict[str, Any]]:
        return self._json("GET", f"/api/studies/{slug}/releases/")

    def create_release(self, slug: str, version: str, formats: Iterable[str], *, changelog: str = "",
                       delta: float | None = None, license: str = "") -> list[dict[str, Any]]:
        """Queue release `version` in `formats` (csv, jsonl, parquet, pairs, consensus, hf, hf-full, items-parquet,
        consensus-parquet, raters-parquet, …); a worker builds it (see `releases`, `wait_for_release`).
        `license` (e.g. "cc-by-4.0") is required with hf and hf-full."""
        body: dict[str, Any] = {"version": version, "formats": list(formats), "changelog": changelog,
                                "license": license}
        if delta is not None:
            body["delta"] = delta
        return self._json("POST", f"/api/studies/{slug}/releases/", json=body)

    def wait_for_release(self, slug: str, version: str, fmt: str, *, poll_s: float = 0.5,
                         timeout_s: float = 300.0) -> dict[str, Any]:
        deadline = time.monotonic() + timeout_s
        while True:
            release = self._release(slug, version, fmt)
            if release["status"] == "ready":
                return release
            if release["status"] == "failed":
                raise ConcordError(500, f"release {version} ({fmt}) failed: {release['error']}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"release {version} ({fmt}) still {release['status']} after {timeout_s} s")
            time.sleep(poll_s)

    def _release(self, slug: str, version: str, fmt: str) -> dict[str, Any]:
        for release in self.releases(slug):
            if release["version"] == version and release["format"] == fmt:
                return release
        raise ConcordError(404, f"study {slug} has no release {version} in {fmt}")

    def download_release(self, slug: str, version: str, fmt: str, dest: str | Path = ".") -> Path:
        """Download a ready release into the folder `dest` and check its SHA-256 against the one the
        server recorded at release time; a mismatch removes the file and raises ReleaseChecksumError."""
        release = self._release(slug, version, fmt)
        if release["status"] != "ready":
            raise ConcordError(409, f"release {version} ({fmt}) is {release['status']}, not ready")
        with self._http.stream("GET", f"/api/studies/{slug}/releases/{release['id']}/file/") as response:
            if response.status_code >= 400:
                response.read()
                raise ConcordError.from_response(response)
            name = _attachment_name(response.headers.get("content-disposition", "")) or f"{slug}-{version}.{fmt}"
            Path(dest).mkdir(parents=True, exist_ok=True)
            path = Path(dest) / name
            digest = hashlib.sha256()
            with path.open("wb") as out:
                for chunk in response.iter_bytes():
                    digest.update(chunk)
                    out.write(chunk)
        got = digest.hexdigest()
        if got != release["sha256"] or got != response.headers.get("x-checksum-sha256", got):
            path.unlink(missing_ok=True)
            raise ReleaseChecksumError(0, f"release {version} ({fmt}): SHA-256 {got} is not the recorded "
                                          f"{release['sha256']}; the download was removed")
        return path


    def download_hf_dataset(self, slug: str, version: str, dest: str | Path = ".", *, full: bool = False) -> Path:
        """Download the release's `hf` file (checksum checked) and unzip it into `dest/<slug>-<version>/`:
        the folder `datasets.load_dataset(folder)` opens (README.md dataset card, data/ratings.parquet).
        `full`: the `hf-full` release instead, whose configs are ratings, items, consensus and raters
        (`load_dataset(folder, "items")`)."""
        archive = self.download_release(slug, version, "hf-full" if full else "hf", dest)
        folder = Path(dest) / f"{slug}-{version}"
        with zipfile.ZipFile(archive) as zf:
            zf.extractall(folder)  # extractall keeps every member inside `folder`
        return folder


def _nullable(arrow_type: Any) -> Any:
    """Arrow -> pandas nullable dtypes: integers with gaps stay integers, booleans stay booleans.
    Strings take pandas' own string dtype (missing is NaN, so comparisons stay plain booleans)."""
    import pyarrow as pa

    mapping = {pa.int8(): pd.Int8Dtype(), pa.int16(): pd.Int16Dtype(), pa.int32(): pd.Int32Dtype(),
               pa.int64(): pd.Int64Dtype(), pa.bool_(): pd.BooleanDtype()}
    return mapping.get(arrow_type)


def _attachment_name(disposition: str) -> str | None:
    """The file name of `attachment; filename="x.parquet"`, without any folder part."""
    for part in disposition.split(";"):
        key, _, value = part.strip().partition("=")
        if key.lower() == "filename" and value:
            return Path(value.strip('"')).name
    return None
