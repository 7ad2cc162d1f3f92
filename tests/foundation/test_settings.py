import os
import subprocess
import sys

from tests.conftest import REPO


def _python(code: str, env: dict) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if k not in {"SECRET_KEY", "DEBUG", "CONCORD_TESTING"}}
    return subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True,
                          env={**clean, "DJANGO_SETTINGS_MODULE": "config.settings", **env})


def test_production_refuses_to_serve_without_secret_key():
    result = _python("import config.wsgi", {})
    assert result.returncode != 0
    assert "SECRET_KEY must be set" in result.stderr
    assert _python("import config.wsgi", {"SECRET_KEY": "k" * 50}).returncode == 0


def test_offline_commands_need_no_secret_key_and_no_database(tmp_path):
    ratings = tmp_path / "r.csv"
    ratings.write_text("item,rater,score\n1,a,1\n1,b,2\n2,a,3\n2,b,3\n3,a,4\n3,b,5\n")
    result = subprocess.run([sys.executable, "manage.py", "agreement", str(ratings), "--json"], cwd=REPO,
                            capture_output=True, text=True,
                            env={k: v for k, v in os.environ.items()
                                 if k not in {"SECRET_KEY", "DEBUG", "CONCORD_TESTING", "DATABASE_URL"}})
    assert result.returncode == 0, result.stderr
    assert '"n_items": 3' in result.stdout


def test_production_settings_are_secure_by_default():
    result = subprocess.run(
        [sys.executable, "-c", "import django; django.setup(); from django.conf import settings as s;"
         "print(s.SESSION_COOKIE_SECURE, s.CSRF_COOKIE_SECURE, s.DEBUG, s.ALLOWED_HOSTS)"],
        cwd=REPO, capture_output=True, text=True,
        env={**{k: v for k, v in os.environ.items() if k not in {"DEBUG", "CONCORD_TESTING"}},
             "DJANGO_SETTINGS_MODULE": "config.settings", "SECRET_KEY": "x" * 50},
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["True", "True", "False", "[]"]
