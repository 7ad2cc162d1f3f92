"""The audit log: downloads, member and setting changes and releases are recorded with who, what,
when and target, and shown to site admins."""

from __future__ import annotations

from annotation.models import AuditEntry


def test_admin_actions_are_recorded(rated, admin_user, annotator, client_for, api_for):
    client = client_for(admin_user)
    assert client.get(f"/studies/{rated.slug}/crowd-links/payments.csv").status_code == 200
    assert client.get(f"/studies/{rated.slug}/datasets/export/csv/").status_code == 200
    client.post(f"/studies/{rated.slug}/members/status/", {"user": annotator.pk, "action": "pause"})
    client.post(f"/studies/{rated.slug}/settings/", {
        "name": "Renamed", "raters_per_item": 2, "attention_check_rate": 0, "attention_fail_pause": 0,
        "retention_days": 30, "randomize_items": "on", "randomize_outputs": "on", "counterbalance": "on",
        "confirm": "on"})
    client.post(f"/studies/{rated.slug}/datasets/releases/", {"version": "1.0.0", "formats": ["csv"],
                                                               "changelog": "first"})
    got = {}
    for e in AuditEntry.objects.filter(study=rated, actor=admin_user):  # newest first
        got.setdefault(e.action, e)
    assert got["payment_download"].target == f"{rated.slug}-payments.csv"
    assert got["data_download"].detail["format"] == "csv"
    assert got["member_change"].target == annotator.username
    assert got["member_change"].detail["status"] == ["active", "paused"]
    assert "retention_days" in got["setting_change"].target and got["setting_change"].detail["retention_days"][1] == "30"
    assert got["release"].target == "1.0.0"
    assert all(e.actor_name == "boss" and e.at for e in got.values())
    page = client.get("/audit/", {"study": rated.slug}).content.decode()
    for label in ("Payment sheet download", "Data download", "Member change", "Setting change", "Dataset release"):
        assert label in page
    only = client.get("/audit/", {"action": "release"}).content.decode()
    assert "Dataset release" in only and "Payment sheet download</td>" not in only


def test_a_researchers_download_is_recorded_too(rated, researcher, client_for):
    assert client_for(researcher).get(f"/studies/{rated.slug}/datasets/export/jsonl/").status_code == 200
    entry = AuditEntry.objects.get(action="data_download")
    assert entry.actor == researcher and entry.study == rated


def test_details_read_as_changes():
    from annotation.audit import audit_detail_text

    assert audit_detail_text({"status": ["active", "paused"], "released": 2}) == "status: active → paused; released: 2"
    assert audit_detail_text({"added": ["a", "b"], "releases_kept": []}) == "added: a, b; releases kept: –"
