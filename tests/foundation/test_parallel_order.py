"""The order in which `make test`'s workers are handed the groups (tests/parallel.py): the groups without the
browser before the browser ones, each part longest first by the recorded seconds, a group never recorded at one
second a test; one worker takes the groups that wait first, the other the rest; a worker still holding a long
group is handed a short one; and the recorded seconds read back from a pytest-xdist run's JUnit file."""

from __future__ import annotations

import json

from tests import parallel
from tests.parallel import group_order, next_group, record_group_seconds, uses_demo


def test_browser_groups_last_and_each_part_longest_first():
    groups = {"a.py": 3, "b.py": 40, "c.py::browser": 1, "d.py::browser": 9, "new.py": 20}
    seconds = {"a.py": 150.0, "b.py": 12.0, "c.py::browser": 154.5, "d.py::browser": 30.0}
    assert group_order(groups, seconds) == ["a.py", "new.py", "b.py", "c.py::browser", "d.py::browser"]


def test_recorded_seconds_from_junit_node_ids_split_at_the_last_colons(tmp_path, monkeypatch):
    junit = tmp_path / "run.xml"
    junit.write_text(
        '<testsuites><testsuite>'
        '<testcase classname="tests.x.test_a" name="test_one@tests/x/test_a.py" time="1.25"/>'
        '<testcase classname="tests.x.test_a" name="test_two[p-1]@tests/x/test_a.py" time="2.5"/>'
        '<testcase classname="tests.x.test_b.test_page@tests/x/test_b.py" name="browser" time="154.4"/>'
        '<testcase classname="tests.x.test_c" name="test_ungrouped" time="9"/>'
        '</testsuite></testsuites>')
    monkeypatch.setattr(parallel, "GROUP_SECONDS", tmp_path / "seconds.json")
    seconds = record_group_seconds(junit)
    assert seconds == {"tests/x/test_a.py": 3.8, "tests/x/test_b.py::browser": 154.4}
    assert json.loads((tmp_path / "seconds.json").read_text()) == seconds


def test_one_worker_takes_the_waiting_groups_first_and_the_other_the_rest():
    queue = ["tests/docs/a.py", "tests/stats/b.py", "tests/faults/c.py", "tests/ui/d.py::browser"]
    assert next_group(queue, "gw0") == "tests/docs/a.py"
    assert next_group(queue, "gw1") == "tests/stats/b.py"
    assert next_group(queue[2:], "gw1") == "tests/faults/c.py"  # none of its kind left: any without the browser
    assert next_group(queue[3:], "gw0") == "tests/ui/d.py::browser"  # browser groups after all the others
    assert next_group(["tests/ui/d.py::browser", "tests/stats/b.py"], "gw0") == "tests/stats/b.py"


def test_the_worker_that_does_not_wait_first_takes_the_demo_modules_after_its_others():
    queue = ["tests/protocols/test_demo.py", "tests/commands/test_lived_in.py", "tests/docs/test_docs_blocks.py",
             "tests/stats/test_comparisons.py", "tests/a11y/test_report_demo.py::browser"]
    assert uses_demo("tests/protocols/test_demo.py") and uses_demo("tests/docs/test_docs_blocks.py")
    assert not uses_demo("tests/stats/test_comparisons.py") and not uses_demo("tests/no_such_module.py")
    assert next_group(queue, "gw1") == "tests/stats/test_comparisons.py"
    assert next_group(queue[:3] + queue[4:], "gw1") == "tests/protocols/test_demo.py"  # when nothing else is left
    assert next_group(queue, "gw0") == "tests/docs/test_docs_blocks.py"  # the other loads it first


def test_a_worker_holding_a_long_group_takes_the_shortest_of_its_kind():
    queue = ["tests/docs/a.py", "tests/faults/e.py", "tests/stats/b.py", "tests/stats/f.py",
             "tests/a11y/axe.py::browser", "tests/ui/g.py::browser"]
    assert next_group(queue, "gw0", holding_long=True) == "tests/faults/e.py"
    assert next_group(queue, "gw1", holding_long=True) == "tests/stats/f.py"
    assert next_group(queue[4:], "gw1", holding_long=True) == "tests/ui/g.py::browser"  # the long one to another
    assert next_group(queue[4:], "gw1") == "tests/a11y/axe.py::browser"
    demo_last = ["tests/stats/b.py", "tests/protocols/test_demo.py"]  # the odd worker still leaves the demo for later
    assert next_group(demo_last, "gw1", holding_long=True) == "tests/stats/b.py"
