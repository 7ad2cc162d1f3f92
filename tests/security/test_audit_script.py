"""scripts/audit.sh decides from pip-audit's JSON report: here a stand-in pip-audit plays each
situation (clean, vulnerable, service unreachable, a mirror that knows no package, broken)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.conftest import REPO

STAND_IN = """#!{python}
import json, os, sys
args = sys.argv[1:]
out = args[args.index("--output") + 1]
mode = os.environ["STAND_IN_MODE"]
ok = {{"name": "django", "version": "5.2.19", "vulns": []}}
if mode == "no-network":
    print("requests.exceptions.ConnectionError: HTTPSConnectionPool(host='pypi.org', port=443): Max retries exceeded")
    sys.exit(1)
if mode == "broken":
    print("usage: pip-audit [-h] ... error: unrecognized arguments")
    sys.exit(2)
deps = {{
    "clean": [ok, {{"name": "localpkg", "version": "1.0", "skip_reason": "Dependency not found on PyPI"}}],
    "vulnerable": [ok, {{"name": "urllib3", "version": "1.0", "vulns": [
        {{"id": "GHSA-test-0001", "fix_versions": ["2.0.1"], "aliases": [], "description": ""}}]}}],
    "mirror-404": [{{"name": n, "version": "1", "skip_reason": "Dependency not found on PyPI and could not be audited"}}
                   for n in ("django", "numpy")],
}}[mode]
ignored = {{args[i + 1] for i, a in enumerate(args) if a == "--ignore-vuln"}}
for d in deps:
    if "vulns" in d:
        d["vulns"] = [v for v in d["vulns"] if v["id"] not in ignored]
json.dump({{"dependencies": deps, "fixes": []}}, open(out, "w"))
sys.exit(1 if any(d.get("vulns") for d in deps) else 0)
"""


@pytest.fixture
def audit(tmp_path):
    stand_in = tmp_path / "pip-audit"
    stand_in.write_text(STAND_IN.format(python=sys.executable))
    stand_in.chmod(0o755)

    def _run(mode: str, **env: str) -> subprocess.CompletedProcess:
        return subprocess.run(["bash", "scripts/audit.sh"], cwd=REPO, capture_output=True, text=True, timeout=60,
                              env={**os.environ, "PIP_AUDIT": str(stand_in), "PYTHON": sys.executable,
                                   "STAND_IN_MODE": mode, **env})

    return _run


def test_clean_dependencies_pass_and_say_what_was_not_audited(audit):
    result = audit("clean")
    assert result.returncode == 0, result.stderr
    assert "audited 1 packages: no known vulnerabilities (1 not on PyPI, not audited: localpkg)" in result.stdout


def test_a_known_vulnerability_fails_with_package_advisory_and_fix(audit):
    result = audit("vulnerable")
    assert result.returncode == 1
    assert "urllib3 1.0: GHSA-test-0001 (fixed in 2.0.1)" in result.stdout


def test_an_accepted_advisory_can_be_ignored(audit):
    result = audit("vulnerable", AUDIT_IGNORE="GHSA-test-0001")
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("mode", ["no-network", "mirror-404"])
def test_an_unreachable_service_skips_the_audit_and_says_so(audit, mode):
    result = audit(mode)
    assert result.returncode == 0
    assert result.stdout.startswith("audit skipped: service unreachable")


def test_a_broken_pip_audit_fails_rather_than_passing(audit):
    result = audit("broken")
    assert result.returncode == 2
    assert "audit failed" in result.stderr


def test_the_real_audit_runs_on_this_machine():
    """Against the real service: either a verdict or the explicit skip; never a silent pass."""
    result = subprocess.run(["bash", "scripts/audit.sh"], cwd=REPO, capture_output=True, text=True, timeout=600)
    assert result.returncode in (0, 1), result.stdout + result.stderr
    assert result.stdout.startswith(("audit skipped: service unreachable", "audited ")) or result.returncode == 1
    if result.returncode == 0 and result.stdout.startswith("audited "):
        assert int(result.stdout.split()[1]) > 50  # the whole environment, not a handful
