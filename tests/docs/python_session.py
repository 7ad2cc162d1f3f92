"""One reader's Python session for a documentation page: each line on standard input is a JSON
{"code": ...}; the code runs in the session's one namespace (so a later block sees an earlier block's
names), and one JSON line answers {"ok", "out", "error"} with what it printed. Run with the venv's python
in the folder the reader works in, as the reader would start `.venv/bin/python` there."""

import contextlib
import io
import json
import sys
import traceback

namespace = {"__name__": "__main__"}
answers = sys.stdout
for line in sys.stdin:
    code = json.loads(line)["code"]
    out = io.StringIO()
    error = ""
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            exec(compile(code, "<docs block>", "exec"), namespace)
    except BaseException:  # noqa: BLE001  a failing step is reported, the session goes on
        error = traceback.format_exc()
    answers.write(json.dumps({"ok": not error, "out": out.getvalue(), "error": error}) + "\n")
    answers.flush()
