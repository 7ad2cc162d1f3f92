"""tests/screens.py: screenshots are taken only when a person asked for them (CONCORD_SCREENSHOTS=1), whole
pages whole, and the page is left scrolled where it was."""

from __future__ import annotations

import struct

import pytest

from tests import screens

pytestmark = pytest.mark.browser

TALL_PAGE = "<body style='margin:0'>" + "".join(f"<p style='height:100px;margin:0'>row {i}</p>" for i in range(40))


def _png_size(path) -> tuple[int, int]:
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", head[16:24])


@pytest.fixture
def tall(browser):
    context = browser.new_context(viewport={"width": 390, "height": 600})
    page = context.new_page()
    page.set_content(TALL_PAGE)
    page.evaluate("window.scrollTo(0, 1500)")
    yield page
    context.close()


def test_screenshots_are_written_only_when_wanted(tall, tmp_path, monkeypatch):
    monkeypatch.setattr(screens, "WANTED", False)
    screens.screenshot(tall, tmp_path / "off" / "page.png", full_page=True)
    screens.screenshot(tall.locator("p").first, tmp_path / "off" / "row.png")
    assert not (tmp_path / "off").exists()
    monkeypatch.setattr(screens, "WANTED", True)
    screens.screenshot(tall, tmp_path / "on" / "page.png", full_page=True)
    assert _png_size(tmp_path / "on" / "page.png") == (390, 4000)  # the whole page, not the window
    # Chromium took it by resizing the window; the page is read where the reader left it
    assert tall.evaluate("[window.scrollY, document.elementFromPoint(10, 10).textContent]") == [1500, "row 15"]
    screens.screenshot(tall.locator("p").first, tmp_path / "on" / "row.png")
    assert _png_size(tmp_path / "on" / "row.png") == (390, 100)

