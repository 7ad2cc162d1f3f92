"""The README's and the documentation's screenshots, taken in Chromium from the demo so that they stay current.

    .venv/bin/python scripts/screenshots.py [--url http://127.0.0.1:8000] [--out docs/img]
    .venv/bin/python scripts/screenshots.py --start [--port 8000]

By default it uses a Concord already serving the demo (`make run`) at --url. With --start it starts
`python -m config.launcher run` itself on --port (with the environment it was given: DATABASE_URL and
REDIS_URL, else the embedded servers of .data/), waits for the sign-in page, and stops it at the end.
It signs in as the demo accounts (password `<username>-demo`) and writes:

- workspace.png: the rater's workspace of demo-rrgen-001 (as `annotator`);
- report-summary.png: the summary that opens the report of demo-rrgen-001 (as `researcher`);
- judges-vs-humans.png: the judges beside the humans on one criterion of that report (as `researcher`);
- screenshots.json: what the screenshots show that the demo decides (the report's verdicts, its raters, the
  responses in the workspace): tests/protocols/test_demo.py fails when the demo no longer shows it, until
  the screenshots are taken again.

Chromium is Debian's (/usr/bin/chromium, or CHROMIUM), driven by Playwright, as in the tests.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import httpx
from playwright.sync_api import Page, sync_playwright

ROOT = Path(__file__).resolve().parent.parent
STUDY = "demo-rrgen-001"
# The workspace as a rater on a laptop sees it; the report wider, so that its widest table is whole.
# A report is computed on its first opening (then cached): on a busy machine that took over Playwright's 30 s.
REPORT_TIMEOUT_MS = 300_000
VIEWPORTS = {"workspace": (1400, 900), "report_summary": (1800, 1000), "judges_vs_humans": (1800, 1000)}


@contextmanager
def concord(url: str | None, port: int):
    """The base URL of a Concord serving the demo: `url` as given, or one started here on `port`."""
    if url:
        yield url.rstrip("/")
        return
    env = {**os.environ, "PORT": str(port)}
    server = subprocess.Popen([sys.executable, "-m", "config.launcher", "run"], cwd=ROOT, env=env,
                              start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        _wait_for(base + "/login/", server, timeout_s=900)  # a first run loads the demo (minutes)
        yield base
    finally:
        os.killpg(server.pid, signal.SIGINT)  # the launcher stops its worker, web server and databases
        server.wait(timeout=120)


def _wait_for(url: str, server: subprocess.Popen, *, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise SystemExit(f"config.launcher run exited with {server.returncode} before serving")
        try:
            if httpx.get(url, timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(1)
    raise SystemExit(f"{url} did not answer within {timeout_s:.0f} s")


def sign_in(page: Page, base: str, username: str) -> None:
    page.goto(base + "/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", f"{username}-demo")
    page.click("button[type=submit]")
    page.wait_for_url(base + "/")


def workspace(page: Page, base: str, out: Path, shown: dict) -> Path:
    sign_in(page, base, "annotator")
    page.goto(f"{base}/studies/{STUDY}/rate/", wait_until="networkidle")
    page.screenshot(path=out / "workspace.png")
    shown["workspace"] = {"study": STUDY, "responses": page.locator("[role=tab]").count()}
    return out / "workspace.png"


def report_summary(page: Page, base: str, out: Path, shown: dict) -> Path:
    sign_in(page, base, "researcher")
    page.goto(f"{base}/studies/{STUDY}/report/", wait_until="networkidle", timeout=REPORT_TIMEOUT_MS)
    summary = page.locator("#answers")
    _top_of(page, summary, out / "report-summary.png", height=1000)
    shown["report"] = {"study": STUDY, "verdicts": page.locator("#answers span.verdict").all_inner_texts(),
                       "raters": page.locator("#raters table").first.locator("tbody tr").count()}
    return out / "report-summary.png"


def judges_vs_humans(page: Page, base: str, out: Path, shown: dict) -> Path:
    sign_in(page, base, "researcher")
    page.goto(f"{base}/studies/{STUDY}/report/", wait_until="networkidle", timeout=REPORT_TIMEOUT_MS)
    section = page.locator("section.card", has=page.locator("h2", has_text="Judges vs humans")).first
    _top_of(page, section, out / "judges-vs-humans.png", height=1000)
    return out / "judges-vs-humans.png"


def _top_of(page: Page, element, path: Path, *, height: int) -> None:
    """The element's top `height` pixels: a long section's first screenful (its verdicts, its plot)."""
    if element.count() == 0:
        raise SystemExit(f"nothing to take for {path.name} on {page.url}: is the demo loaded?")
    box = element.bounding_box()
    scroll_y = page.evaluate("window.scrollY")
    clip = {"x": box["x"], "y": box["y"] + scroll_y, "width": box["width"], "height": min(box["height"], height)}
    page.screenshot(path=path, clip=clip, full_page=True)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", help="a Concord serving the demo (default http://127.0.0.1:8000 unless --start)")
    parser.add_argument("--start", action="store_true", help="start `python -m config.launcher run` here")
    parser.add_argument("--port", type=int, default=8000, help="with --start: the port to serve on")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "img")
    args = parser.parse_args(argv)
    if args.start and args.url:
        parser.error("give --url (a running Concord) or --start, not both")
    args.out.mkdir(parents=True, exist_ok=True)
    shown: dict = {}
    chromium = os.environ.get("CHROMIUM", "/usr/bin/chromium")
    with concord(None if args.start else (args.url or "http://127.0.0.1:8000"), args.port) as base, \
            sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, headless=True, args=["--no-sandbox"])
        try:
            for shot in (workspace, report_summary, judges_vs_humans):
                width, height = VIEWPORTS[shot.__name__]
                context = browser.new_context(viewport={"width": width, "height": height}, device_scale_factor=1)
                try:
                    print(shot(context.new_page(), base, args.out, shown))
                finally:
                    context.close()
        finally:
            browser.close()
    (args.out / "screenshots.json").write_text(json.dumps(shown, indent=2, ensure_ascii=False) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
