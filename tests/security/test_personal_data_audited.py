"""Every route of the inventory that serves personal data (config.routes, Data.PERSONAL) writes one
audit entry per response: who, which action, which study, which file, with the parameters asked;
a refused request writes none."""

import pytest

from annotation.models import AuditEntry
from config.routes import ROUTES, Data, url_patterns
from tests.security.test_permission_matrix import client_as, path_for, world  # noqa: F401 - the fixture

pytestmark = pytest.mark.django_db

PERSONAL = [p for p in url_patterns() if ROUTES[p.key].data == Data.PERSONAL and "format" not in p.params]


def _get(client, path: str, query: str):
    return client.get(f"{path}?{query}" if query else path)


def test_the_inventory_has_personal_routes():
    assert len({p.key for p in PERSONAL}) >= 15


@pytest.mark.parametrize("pattern", PERSONAL, ids=lambda p: p.key)
def test_each_serving_is_audited_once(world, pattern):  # noqa: F811 - the fixture
    route = ROUTES[pattern.key]
    admin = world.users["admin"]
    client = client_as("admin", world)
    for query in route.queries:
        before = set(AuditEntry.objects.values_list("pk", flat=True))
        response = _get(client, path_for(pattern, world, "admin"), query)
        assert response.status_code == 200, (pattern.key, query, response.status_code)
        response.getvalue()  # a streamed body is read whole: it must not fail either
        new = list(AuditEntry.objects.exclude(pk__in=before))
        assert len(new) == 1, (pattern.key, query, [(e.action, e.target) for e in new])
        entry = new[0]
        assert (entry.actor_id, entry.actor_name, entry.action, entry.study_id) == \
            (admin.pk, admin.username, route.audit_of(query), world.study.pk), pattern.key
        assert entry.target, pattern.key
        asked = dict(pair.split("=", 1) for pair in query.split("&")) if query else {}
        assert asked.items() <= entry.detail.get("parameters", {}).items(), (pattern.key, entry.detail)


def test_a_refused_request_writes_nothing(world):  # noqa: F811 - the fixture
    before = AuditEntry.objects.count()
    for persona in ("researcher-removed", "annotator", "crowd", "researcher-other"):
        client = client_as(persona, world)
        for pattern in PERSONAL:
            for query in ROUTES[pattern.key].queries:
                assert _get(client, path_for(pattern, world, persona), query).status_code in (403, 404), \
                    (persona, pattern.key)
    assert AuditEntry.objects.count() == before


def test_the_payment_entry_logs_the_amounts_asked(world):  # noqa: F811 - the fixture
    """It logged the last query value read (the bonus), as the pay per item."""
    client = client_as("admin", world)
    slug = world.study.slug
    assert client.get(f"/studies/{slug}/crowd-links/payments.csv?pay_per_item=0.15&bonus_per_item=0.05"
                      ).status_code == 200
    entry = AuditEntry.objects.filter(action=AuditEntry.Action.PAYMENT_DOWNLOAD).latest("pk")
    assert (entry.detail["pay_per_item"], entry.detail["bonus_per_item"], entry.detail["format"]) == \
        ("0.15", "0.05", "sheet")
    assert client.get(f"/studies/{slug}/crowd-links/payments.csv?format=bulk_approve").status_code == 200
    entry = AuditEntry.objects.filter(action=AuditEntry.Action.PAYMENT_DOWNLOAD).latest("pk")
    assert (entry.target, entry.detail["pay_per_item"], entry.detail["format"]) == \
        (f"{slug}-bulk-approve.csv", None, "bulk_approve")
