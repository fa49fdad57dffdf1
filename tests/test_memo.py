"""tests/_memo.py leaves a test out only while everything it read is byte for byte what it was.

Each case runs pytest with the plugin on a small project of its own (``MEMO_ROOT``), changes one
input, runs again and looks at which tests ran.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
# Each case's pytest reads only its own small project and the plugin (code, in the code digest).
pytestmark = pytest.mark.spawned_reads_seen

FIRST = '''
from helper import VALUE  # helper.py reads data/h.txt when it is imported (first by this module)

def test_helper_value():
    assert VALUE == "1"
'''

SUITE = '''
import os
import subprocess
import sys
from pathlib import Path

import pytest
from _memo import not_inputs
from helper import VALUE

DATA = Path(__file__).parent.parent / "data"
with not_inputs():  # the cases' files, read here only to decide which tests are collected
    CASES = sorted(p.stem for p in DATA.glob("case_*.txt") if p.read_text().startswith("yes"))


@pytest.fixture(scope="module")
def fixture_input():
    return (DATA / "f.txt").read_text()


def test_reads_a():
    assert (DATA / "a.txt").read_text() == "1"


def test_lists_data():
    assert "a.txt" in os.listdir(DATA)


def test_uses_fixture(fixture_input):
    assert fixture_input == "1"


def test_uses_helper_imported_elsewhere_first():
    assert VALUE == "1"


def test_starts_a_process():
    subprocess.run([sys.executable, "-c", "pass"], check=True)


@pytest.mark.spawned_reads_seen
def test_starts_a_process_that_reads_nothing_of_ours():
    subprocess.run([sys.executable, "-c", "pass"], check=True)


@pytest.mark.parametrize("case", CASES)
def test_case(case):
    assert (DATA / f"{case}.txt").read_text().startswith("yes")


def test_fails_when_b_is_2():
    assert (DATA / "b.txt").read_text() != "2"
'''

HELPER = '''
from pathlib import Path

VALUE = (Path(__file__).parent.parent / "data" / "h.txt").read_text()
'''

ALL = {"test_a_first.py::test_helper_value", "test_x.py::test_reads_a", "test_x.py::test_lists_data",
       "test_x.py::test_uses_fixture", "test_x.py::test_uses_helper_imported_elsewhere_first",
       "test_x.py::test_starts_a_process", "test_x.py::test_fails_when_b_is_2",
       "test_x.py::test_starts_a_process_that_reads_nothing_of_ours", "test_x.py::test_case[case_1]",
       "test_x.py::test_case[case_2]"}
ALWAYS = {"test_x.py::test_starts_a_process"}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    data, tests = tmp_path / "data", tmp_path / "tests"
    data.mkdir()
    tests.mkdir()
    for name in ("a", "b", "f", "h"):
        (data / f"{name}.txt").write_text("1", encoding="utf-8")
    for name in ("case_1", "case_2"):
        (data / f"{name}.txt").write_text("yes", encoding="utf-8")
    (tests / "conftest.py").write_text('pytest_plugins = ["_memo"]\n', encoding="utf-8")
    (tests / "helper.py").write_text(HELPER, encoding="utf-8")
    (tests / "test_a_first.py").write_text(FIRST, encoding="utf-8")
    (tests / "test_x.py").write_text(SUITE, encoding="utf-8")
    return tmp_path


def _run(project: Path, **env) -> dict[str, set[str]]:
    """Run the project's tests; return the tests that passed and those that failed."""
    base = {k: v for k, v in os.environ.items() if k not in ("CI", "MEMO")}
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "tests", "-p", "no:cacheprovider", "-q", "-rA"],
        cwd=project, capture_output=True, text=True, check=False,
        env={**base, "MEMO_ROOT": str(project), "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "PYTHONPATH": f"{project / 'tests'}{os.pathsep}{TESTS}", **env})
    outcomes = {"PASSED": set(), "FAILED": set()}
    for outcome, nodeid in re.findall(r"^(PASSED|FAILED) tests/(\S+)", result.stdout, re.M):
        outcomes[outcome].add(nodeid)
    assert outcomes["PASSED"] | outcomes["FAILED"] or " deselected" in result.stdout, result.stdout[-3000:]
    return {"passed": outcomes["PASSED"], "failed": outcomes["FAILED"], "returncode": result.returncode}


def _ran(outcomes) -> set[str]:
    return outcomes["passed"] | outcomes["failed"]


def test_a_passed_test_is_left_out_until_an_input_of_its_changes(project):
    data = project / "data"
    assert _run(project)["passed"] == ALL
    assert _ran(_run(project)) == ALWAYS  # nothing changed: only the test that starts a process runs

    (data / "a.txt").write_text("1", encoding="utf-8")  # rewritten with the same bytes: no change
    assert _ran(_run(project)) == ALWAYS
    (data / "a.txt").write_text("10", encoding="utf-8")
    assert _run(project)["failed"] == {"test_x.py::test_reads_a"}  # read again, and it fails
    (data / "a.txt").write_text("1", encoding="utf-8")
    assert _ran(_run(project)) == ALWAYS | {"test_x.py::test_reads_a"}  # a failed test is not kept

    (data / "new.txt").write_text("1", encoding="utf-8")  # a folder it listed gains a name
    assert _ran(_run(project)) == ALWAYS | {"test_x.py::test_lists_data"}
    (data / "f.txt").write_text("1 ", encoding="utf-8")  # what a fixture it uses read
    assert _run(project)["failed"] == {"test_x.py::test_uses_fixture"}
    (data / "f.txt").write_text("1", encoding="utf-8")
    _run(project)


def test_what_a_module_import_reads_counts_for_every_module_importing_it(project):
    _run(project)
    (project / "data" / "h.txt").write_text("2", encoding="utf-8")
    assert _run(project)["failed"] == {"test_a_first.py::test_helper_value",
                                       "test_x.py::test_uses_helper_imported_elsewhere_first"}


def test_reads_that_only_decide_the_collection_are_nobodys_input(project):
    _run(project)
    (project / "data" / "case_2.txt").write_text("yes, again", encoding="utf-8")  # read by its own case too
    assert _ran(_run(project)) == ALWAYS | {"test_x.py::test_case[case_2]"}  # not case_1's input
    (project / "data" / "case_3.txt").write_text("yes", encoding="utf-8")  # a new case: a new id
    assert _ran(_run(project)) == ALWAYS | {"test_x.py::test_case[case_3]", "test_x.py::test_lists_data"}


def test_a_failing_test_runs_again_and_fails_again(project):
    _run(project)
    (project / "data" / "b.txt").write_text("2", encoding="utf-8")
    for _ in range(2):
        assert _run(project)["failed"] == {"test_x.py::test_fails_when_b_is_2"}


def test_a_code_change_or_memo_0_runs_everything(project):
    _run(project)
    assert _run(project, MEMO="0")["passed"] == ALL
    assert _run(project, CI="true")["passed"] == ALL
    helper = project / "tests" / "helper.py"
    helper.write_text(helper.read_text(encoding="utf-8") + "# a comment\n", encoding="utf-8")
    assert _run(project)["passed"] == ALL


def test_a_run_with_every_test_left_out_passes(project):
    (project / "tests" / "test_x.py").unlink()
    assert _run(project)["returncode"] == 0
    again = _run(project)
    assert _ran(again) == set() and again["returncode"] == 0  # pytest alone would exit 5 (no tests)
