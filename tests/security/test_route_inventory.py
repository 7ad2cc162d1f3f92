"""The route inventory (config/routes.py) covers the URL confs, names real rules, and is what
docs/security.md shows."""

from pathlib import Path

from django.conf import settings

from config.routes import RULES, ROUTES, Data, counts, markdown_table, unlisted, url_patterns


def test_every_route_is_listed():
    assert unlisted() == [], "routes without an entry in config/routes.py ROUTES"


def test_no_entry_for_a_route_that_is_gone():
    assert sorted(set(ROUTES) - {p.key for p in url_patterns()}) == []


def test_every_rule_is_one_of_the_access_model():
    assert {r.rule for r in ROUTES.values()} <= set(RULES)


def test_personal_data_is_audited_and_read_only_by_study_rules():
    """A route serving participants' personal data names its audit action, and is reached only
    through a study's rule (never by 'anyone' or 'signed in')."""
    for key, route in ROUTES.items():
        if route.data == Data.PERSONAL:
            assert route.audit and route.rule.study_scoped, key


def test_counts():
    n = counts()
    assert n["routes"] == len(ROUTES)
    assert n["personal-data routes"] == sum(r.data == Data.PERSONAL for r in ROUTES.values())


def test_docs_show_the_inventory():
    """docs/security.md holds `manage.py routes` verbatim: regenerate it when a route changes."""
    doc = (Path(settings.BASE_DIR) / "docs" / "security.md").read_text()
    assert markdown_table() in doc
