"""Full-page screenshots that leave the page as they found it.

Chromium takes Playwright's full-page screenshot by resizing the window (to 1×1, to the whole page, then back;
microsoft/playwright#30149). Afterwards the page reads one scroll offset while the compositor keeps another,
and the next pointer event puts the other back: the page jumps between a click's mousedown and its mouseup,
the two land on different elements, and the click is lost (a submit button at the foot of a phone-width page,
about one run in a dozen on a loaded machine). Scrolling back from the page itself makes the two agree."""

from __future__ import annotations

from pathlib import Path


def full_page_screenshot(page, path: str | Path) -> None:
    where = page.evaluate("[window.scrollX, window.scrollY]")
    page.screenshot(path=str(path), full_page=True)
    page.evaluate("([x, y]) => window.scrollTo(x, y)", where)
