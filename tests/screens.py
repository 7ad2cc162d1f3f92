"""Screenshots for a person to look at (test-artifacts/), taken when one will: `make screenshots`, or any
pytest run with CONCORD_SCREENSHOTS=1. No test reads them, and a run that nobody looks at (CI's) paid for
them: the production walk's full-page shots alone were 18.6 s of Chromium's CPU and 18 s of its 60 s
(2026-12-07), as Chromium lays out, rasterises and encodes a page of up to 9,400 px once a width.

Full-page screenshots leave the page as they found it. Chromium takes Playwright's full-page screenshot by
resizing the window (to 1×1, to the whole page, then back; microsoft/playwright#30149). Afterwards the page
reads one scroll offset while the compositor keeps another, and the next pointer event puts the other back:
the page jumps between a click's mousedown and its mouseup, the two land on different elements, and the
click is lost (a submit button at the foot of a phone-width page, about one run in a dozen on a loaded
machine). Scrolling back from the page itself makes the two agree."""

from __future__ import annotations

import os
from pathlib import Path

WANTED = os.environ.get("CONCORD_SCREENSHOTS", "") == "1"


def screenshot(target, path: str | Path, *, full_page: bool = False) -> None:
    """A screenshot of a page or a locator's element into `path`, when screenshots are wanted."""
    if not WANTED:
        return
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    if full_page:
        full_page_screenshot(target, path)
    else:
        target.screenshot(path=str(path))


def full_page_screenshot(page, path: str | Path) -> None:
    """The whole page, taken now (screenshot() takes it only when wanted)."""
    where = page.evaluate("[window.scrollX, window.scrollY]")
    page.screenshot(path=str(path), full_page=True)
    page.evaluate("([x, y]) => window.scrollTo(x, y)", where)
