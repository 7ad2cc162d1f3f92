"""`make run`'s fast second start and its demo filling in the background: the docs site is built again only
when a source changed, the schema step runs only when a migration changed or the database lost its schema,
and the home page shows how far the demo has come while it loads."""

from __future__ import annotations

import os
import time

import pytest

from config.run_console import BUILT_MARK, docs_build_command, migrations_pending, note_migrated


@pytest.fixture
def tree(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "index.md").write_text("# Home\n")
    (tmp_path / "mkdocs.yml").write_text("site_name: x\n")
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "x"\n[project.optional-dependencies]\ndev = ["pytest==9", "mkdocs==1.6.1", '
        '"mkdocs-material==9.8.2"]\n')
    return tmp_path


def _age(path, seconds: float) -> None:
    then = time.time() - seconds
    os.utime(path, (then, then))


def test_the_docs_build_only_when_a_source_is_newer_than_the_last_build(tree):
    command = docs_build_command(tree, "/venv/bin/python")
    assert command is not None and "mkdocs==1.6.1 mkdocs-material==9.8.2" in command[-1]  # never built: build
    (tree / "site").mkdir()
    (tree / "site" / BUILT_MARK).touch()
    for source in (tree / "docs" / "index.md", tree / "mkdocs.yml"):
        _age(source, 60)
    assert docs_build_command(tree, "/venv/bin/python") is None  # built after every source: a second start skips it
    (tree / "docs" / "index.md").write_text("# Home, edited\n")
    assert docs_build_command(tree, "/venv/bin/python") is not None


def test_the_schema_step_is_skipped_only_while_migrations_and_database_are_as_last_migrated(tmp_path, db,
                                                                                           monkeypatch):
    from tests.conftest import current_database_url

    monkeypatch.setenv("DATABASE_URL", current_database_url())
    root, data = tmp_path / "repo", tmp_path / "data"
    (root / "app" / "migrations").mkdir(parents=True)
    data.mkdir()
    migration = root / "app" / "migrations" / "0001_initial.py"
    migration.write_text("# 1\n")
    assert migrations_pending(root, data)  # never migrated here
    note_migrated(root, data)
    assert not migrations_pending(root, data)
    (root / "app" / "migrations" / "0002_more.py").write_text("# 2\n")
    assert migrations_pending(root, data)  # a new migration
    note_migrated(root, data)
    monkeypatch.setenv("DATABASE_URL", current_database_url() + "_none")  # a database made anew (or gone)
    assert migrations_pending(root, data)


def test_the_home_page_shows_the_demo_filling_in_and_each_study_says_when_it_is_complete(client_for, make_study,
                                                                                          admin_user):
    from annotation.demo_progress import demo_progress_done, demo_progress_end, demo_progress_start

    done, pending = make_study(slug="demo-one"), make_study(slug="demo-two")
    demo_progress_start([done.slug, pending.slug])
    demo_progress_done(done.slug)
    try:
        page = client_for(admin_user).get("/").content.decode()
    finally:
        demo_progress_end()
    assert "The demo studies are being filled" in page and "1 of 2 ready" in page
    assert 'aria-valuenow="50"' in page and 'hx-trigger="every 3s"' in page
    card = page[page.index(f'id="study-{pending.slug}"'):]
    assert card.index("Demo: filling in") < card.index("</section>")
    card = page[page.index(f'id="study-{done.slug}"'):]
    assert card.index("Demo: complete") < card.index("</section>")
    after = client_for(admin_user).get("/").content.decode()
    assert "being filled" not in after and "every 3s" not in after and "Demo: " not in after


def test_the_docs_tools_are_installed_with_the_venvs_uv_where_it_has_no_pip(tree, tmp_path):
    """`make run`'s venv is made without pip (Makefile): MkDocs comes by its uv; a venv without uv uses pip."""
    bin_dir = tmp_path / "venv" / "bin"
    bin_dir.mkdir(parents=True)
    python = str(bin_dir / "python")
    assert f"{python} -m pip install -q mkdocs==" in docs_build_command(tree, python)[-1]
    (bin_dir / "uv").touch()
    assert f"{bin_dir / 'uv'} pip install --python {python} -q mkdocs==" in docs_build_command(tree, python)[-1]
