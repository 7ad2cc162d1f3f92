"""The documentation site (mkdocs.yml): the strict build passes, a broken link fails it, and the pages
generated from the code hold every management command and every API path."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
MKDOCS = [sys.executable, "-m", "mkdocs"]
ENV = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}


def _build(config: Path, site: Path) -> subprocess.CompletedProcess:
    return subprocess.run([*MKDOCS, "build", "--strict", "-f", str(config), "-d", str(site)], cwd=ROOT, env=ENV,
                          capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("site")
    built = _build(ROOT / "mkdocs.yml", out)
    assert built.returncode == 0, built.stderr[-4000:]
    return out


def _nav_pages(nav) -> list[str]:
    pages = []
    for entry in nav:
        value = next(iter(entry.values())) if isinstance(entry, dict) else entry
        pages += _nav_pages(value) if isinstance(value, list) else [value]
    return pages


def test_the_strict_build_makes_every_page_of_the_nav(site, capsys):
    config = yaml.load((ROOT / "mkdocs.yml").read_text(), Loader=yaml.SafeLoader)  # no !!python tags in it
    pages = _nav_pages(config["nav"])
    for page in pages:
        html = site / ("index.html" if page == "index.md" else page.removesuffix(".md") + "/index.html")
        assert html.is_file(), f"{page} was not built"
    built = sorted(site.rglob("index.html"))
    with capsys.disabled():
        print(f"\ndocumentation site: {len(pages)} pages in the nav, {len(built)} HTML pages built (strict)")
    assert len(built) >= len(pages)


def test_a_broken_link_fails_the_strict_build(tmp_path):
    """The site's own link checking (validation: links not_found: warn, strict) on a page with a link to a
    page that does not exist, and on one with an anchor that does not exist."""
    config = yaml.load((ROOT / "mkdocs.yml").read_text(), Loader=yaml.SafeLoader)
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "index.md").write_text("# Home\n\nSee [the guide](guide.md) and [its part](other.md#no-such-part).\n")
    (docs / "other.md").write_text("# Other\n\n## A part\n")
    config.update(docs_dir=str(docs), nav=[{"Home": "index.md"}, {"Other": "other.md"}], hooks=[])
    (tmp_path / "mkdocs.yml").write_text(yaml.safe_dump(config))
    built = _build(tmp_path / "mkdocs.yml", tmp_path / "site")
    assert built.returncode != 0
    assert "'guide.md'" in built.stderr and "not found among documentation files" in built.stderr
    assert "no-such-part" in built.stderr


def test_the_commands_page_is_generated_from_every_command(site):
    from django.core.management import get_commands, load_command_class

    page = (site / "reference" / "commands" / "index.html").read_text()
    ours = {name: app for name, app in get_commands().items() if app in ("config", "rubrics", "annotation", "judges")}
    assert len(ours) >= 15
    for name, app in ours.items():
        assert f'id="{name}"' in page, f"no section for {name}"
        parser = load_command_class(app, name).create_parser("manage.py", name)
        for action in parser._actions:
            for option in action.option_strings:
                if option.startswith("--") and option not in ("--help", "--version", "--settings", "--pythonpath",
                                                              "--traceback", "--no-color", "--force-color",
                                                              "--skip-checks", "--verbosity"):
                    assert f"<code>{option}" in page, f"{name} {option} missing"


def test_the_api_page_is_generated_from_the_openapi_schema(site):
    from drf_spectacular.generators import SchemaGenerator

    schema = SchemaGenerator().get_schema(request=None, public=True)
    page = (site / "reference" / "api" / "index.html").read_text()
    for path, operations in schema["paths"].items():
        for method in operations:
            assert f"{method.upper()} {path}" in page, f"{method.upper()} {path} missing"
    assert (site / "reference" / "openapi.json").is_file()
