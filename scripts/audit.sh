#!/usr/bin/env bash
# Known vulnerabilities in the installed dependencies: pip-audit over .venv against PyPI's advisory data.
#
#   scripts/audit.sh                      exit 0: no known vulnerability; 1: some found; 2: the audit broke
#   AUDIT_IGNORE="GHSA-xxxx PYSEC-yyyy"   advisories accepted for now (say why in the commit that adds them)
#   PIP_AUDIT=/path/to/pip-audit          another pip-audit (tests use a stand-in)
#
# When the vulnerability service cannot be reached (no network, or a mirror that answers every
# package with 404, so that nothing is actually audited) it prints "audit skipped: service
# unreachable" and exits 0: a machine without the service cannot tell, and must not fail CI for it.
set -uo pipefail
cd "$(dirname "$0")/.."

PIP_AUDIT=${PIP_AUDIT:-.venv/bin/pip-audit}
PYTHON=${PYTHON:-.venv/bin/python}
report=$(mktemp)
log=$(mktemp)
trap 'rm -f "$report" "$log"' EXIT

ignore=()
for id in ${AUDIT_IGNORE:-}; do ignore+=(--ignore-vuln "$id"); done

"$PIP_AUDIT" --skip-editable --progress-spinner off --format json --output "$report" "${ignore[@]}" \
    >"$log" 2>&1
status=$?

"$PYTHON" - "$report" "$status" "$log" <<'PY'
import json
import sys
from pathlib import Path

report, status, log = Path(sys.argv[1]), int(sys.argv[2]), Path(sys.argv[3]).read_text(errors="replace")
UNREACHABLE = ("ConnectionError", "NameResolutionError", "Max retries exceeded", "Failed to resolve",
               "Temporary failure in name resolution", "timed out", "Connection refused", "Network is unreachable")


def skipped(why: str) -> None:
    print(f"audit skipped: service unreachable ({why})")
    sys.exit(0)


text = report.read_text() if report.exists() else ""
if not text.strip():
    if any(marker in log for marker in UNREACHABLE):
        skipped(next(line for line in log.splitlines()[::-1] if any(m in line for m in UNREACHABLE)).strip()[:200])
    print(f"audit failed: pip-audit exited {status} without a report\n{log[-3000:]}", file=sys.stderr)
    sys.exit(2)

dependencies = json.loads(text)["dependencies"]
audited = [d for d in dependencies if "skip_reason" not in d]
vulnerable = [d for d in audited if d.get("vulns")]
if vulnerable:
    print(f"{len(vulnerable)} of {len(audited)} audited packages have known vulnerabilities:")
    for d in vulnerable:
        for v in d["vulns"]:
            fixed = ", ".join(v.get("fix_versions") or []) or "no fixed version yet"
            print(f"  {d['name']} {d['version']}: {v['id']} (fixed in {fixed})")
    sys.exit(1)
if not audited:
    reasons = {d["skip_reason"].split(":")[0] for d in dependencies}
    skipped(f"none of {len(dependencies)} packages could be looked up: {'; '.join(sorted(reasons))[:200]}")
if status != 0:
    print(f"audit failed: pip-audit exited {status}\n{log[-3000:]}", file=sys.stderr)
    sys.exit(2)
left = sorted(d["name"] for d in dependencies if "skip_reason" in d)
print(f"audited {len(audited)} packages: no known vulnerabilities"
      + (f" ({len(left)} not on PyPI, not audited: {', '.join(left)})" if left else ""))
PY
