"""Production settings (SECRET_KEY set, DEBUG and CONCORD_TESTING unset), each in a fresh process:
secure cookies, HSTS and the HTTPS redirect on by default, a Content-Security-Policy and the other
security headers on real responses, and `check --deploy`."""

from __future__ import annotations

import json
import os
import re
import secrets
import subprocess
import sys

from bench.loadclient import collected_static_root
from tests.conftest import REPO

PRODUCTION = {
    "SECRET_KEY": secrets.token_urlsafe(50),
    "ALLOWED_HOSTS": "concord.example.org",
    "DATABASE_URL": "postgres://nobody@127.0.0.1:1/none",  # nothing here may need the database
    "REDIS_URL": "redis://127.0.0.1:1/0",
}
HARDENED = {"SECURE_HSTS_SECONDS": "31536000", "SECURE_HSTS_INCLUDE_SUBDOMAINS": "true",
            "SECURE_HSTS_PRELOAD": "true", "SECURE_SSL_REDIRECT": "true"}


def run(code: str, **env: str) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items()
             if k not in {"DEBUG", "CONCORD_TESTING", "SECRET_KEY", "ALLOWED_HOSTS", *HARDENED}
             and not k.startswith(("AXES_", "SESSION_", "CSRF_", "SECURE_"))}
    return subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120,
                          env={**clean, "DJANGO_SETTINGS_MODULE": "config.settings", **PRODUCTION,
                               "STATIC_ROOT": str(collected_static_root()), **env})  # as the image has it


SETTINGS = """
import json, django
django.setup()
from django.conf import settings as s
names = ["DEBUG", "SESSION_COOKIE_SECURE", "CSRF_COOKIE_SECURE", "SESSION_COOKIE_HTTPONLY", "SECURE_HSTS_SECONDS",
         "SECURE_HSTS_INCLUDE_SUBDOMAINS", "SECURE_SSL_REDIRECT", "X_FRAME_OPTIONS", "SECURE_CONTENT_TYPE_NOSNIFF",
         "SECURE_REFERRER_POLICY", "SECURE_PROXY_SSL_HEADER", "AXES_ENABLED", "AXES_FAILURE_LIMIT", "PASSWORD_HASHERS"]
print(json.dumps({n: getattr(s, n) for n in names} | {"AXES_COOLOFF_SECONDS": s.AXES_COOLOFF_TIME.total_seconds()}))
"""


def production_settings(**env: str) -> dict:
    result = run(SETTINGS, **env)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_production_defaults_are_secure():
    s = production_settings()
    assert s["DEBUG"] is False
    assert s["SESSION_COOKIE_SECURE"] and s["CSRF_COOKIE_SECURE"] and s["SESSION_COOKIE_HTTPONLY"]
    assert s["X_FRAME_OPTIONS"] == "DENY"
    assert s["SECURE_CONTENT_TYPE_NOSNIFF"] is True
    assert s["SECURE_REFERRER_POLICY"] == "same-origin"
    assert s["SECURE_PROXY_SSL_HEADER"] == ["HTTP_X_FORWARDED_PROTO", "https"]
    assert (s["SECURE_HSTS_SECONDS"], s["SECURE_SSL_REDIRECT"]) == (31536000, True)
    assert (s["AXES_ENABLED"], s["AXES_FAILURE_LIMIT"], s["AXES_COOLOFF_SECONDS"]) == (True, 10, 15 * 60)
    assert "MD5" not in " ".join(s["PASSWORD_HASHERS"])  # the fast hasher is for the test suite only


def test_hsts_and_https_redirect_are_configurable():
    s = production_settings(**HARDENED)
    assert (s["SECURE_HSTS_SECONDS"], s["SECURE_HSTS_INCLUDE_SUBDOMAINS"], s["SECURE_SSL_REDIRECT"]) == (
        31536000, True, True)
    assert production_settings(SECURE_HSTS_SECONDS="600")["SECURE_HSTS_SECONDS"] == 600
    # a deployment that serves plain http on purpose (a benchmark's server on loopback) says so with its cookies
    plain = production_settings(SESSION_COOKIE_SECURE="0")
    assert (plain["SECURE_HSTS_SECONDS"], plain["SECURE_SSL_REDIRECT"]) == (0, False)
    assert production_settings(SECURE_SSL_REDIRECT="0")["SECURE_HSTS_SECONDS"] == 31536000


HEADERS = """
import json, django
django.setup()
from django.test import Client
client = Client(HTTP_HOST="concord.example.org")
plain = client.get("/login/")
tls = client.get("/login/", secure=True)
forwarded = client.get("/login/", HTTP_X_FORWARDED_PROTO="https")
cookie = tls.cookies["csrftoken"]
print(json.dumps({"plain": [plain.status_code, plain.get("Location", "")], "tls": tls.status_code,
                  "headers": {k: tls.get(k) for k in ("X-Frame-Options", "X-Content-Type-Options", "Referrer-Policy",
                                                      "Strict-Transport-Security", "Cross-Origin-Opener-Policy",
                                                      "Content-Security-Policy")},
                  "cookie_secure": bool(cookie["secure"]), "forwarded": forwarded.status_code}))
"""


def test_responses_carry_the_security_headers():
    result = run(HEADERS, **HARDENED)
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout.strip().splitlines()[-1])
    assert out["plain"] == [301, "https://concord.example.org/login/"]
    assert out["tls"] == 200 and out["forwarded"] == 200  # TLS ended at a proxy that says so
    assert out["headers"] == {
        "X-Frame-Options": "DENY",
        "X-Content-Type-Options": "nosniff",
        "Referrer-Policy": "same-origin",
        "Strict-Transport-Security": "max-age=31536000; includeSubDomains; preload",
        "Cross-Origin-Opener-Policy": "same-origin",
        "Content-Security-Policy": out["headers"]["Content-Security-Policy"],
    }
    policy = dict(d.strip().split(" ", 1) for d in out["headers"]["Content-Security-Policy"].split(";"))
    assert policy["script-src"] == "'self'" and policy["default-src"] == "'self'"  # no inline script, no eval
    assert (policy["object-src"], policy["frame-ancestors"]) == ("'none'", "'none'")
    assert out["cookie_secure"] is True


def test_https_is_the_default():
    result = run(HEADERS)
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout.strip().splitlines()[-1])
    assert out["plain"] == [301, "https://concord.example.org/login/"]
    assert out["headers"]["Strict-Transport-Security"] == "max-age=31536000"


def check_deploy(**env: str) -> tuple[int, set[str], str]:
    """(exit status at --fail-level ERROR, the security and axes checks reported, the output)."""
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy"], cwd=REPO, capture_output=True, text=True, timeout=120,
        env={**{k: v for k, v in os.environ.items()
                if k not in {"DEBUG", "CONCORD_TESTING", "DJANGO_ALLOW_ASYNC_UNSAFE", *HARDENED}},
             **PRODUCTION, "STATIC_ROOT": str(collected_static_root()), **env})
    output = result.stdout + result.stderr
    return result.returncode, set(re.findall(r"\(((?:security|axes)\.[EW]\d+)\)", output)), output


def test_check_deploy_has_no_errors_and_no_security_warnings_once_https_is_configured():
    status, reported, output = check_deploy(**HARDENED)
    assert status == 0 and "ERRORS" not in output, output
    assert reported == set(), output


def test_check_deploy_with_defaults_only_asks_for_the_domain_wide_choices():
    """HSTS and the HTTPS redirect are on by default; whether HSTS covers every subdomain and asks for the
    browsers' preload list depends on the whole domain, so those stay the deployer's (HARDENED sets them).
    Everything else Django's deployment checks and django-axes' checks look at passes."""
    status, reported, output = check_deploy()
    assert status == 0 and "ERRORS" not in output, output
    assert reported == {"security.W005", "security.W021"}, output
