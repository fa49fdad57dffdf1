"""Every test job of the workflow, rehearsed here as GitHub Actions runs it (tests/ci_rehearsal.py).

The rehearsal itself (``-m rehearsal``: how ``make test`` runs its stages on a fresh clone, README)
runs each test job's steps on a fresh clone of HEAD plus the build's artifact, nothing else, and
passes only if every command succeeds and leaves the artifact untouched. The other tests here are quick and show the rehearsal
can fail: a broken job command, a job that writes into the build, an artifact downloaded elsewhere.
The deploy job's input is checked on the same build: what ``actions/upload-pages-artifact`` packs.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tarfile

import ci_rehearsal
import pytest
import yaml
from ci_rehearsal import ROOT, WORKFLOW, RehearsalError, rehearse

WF = ci_rehearsal.load()
BUILD = ROOT / "_build"


@pytest.fixture(scope="module", autouse=True)
def _the_build():
    missing = [p for p in ci_rehearsal.artifact(WF)[1] if not (ROOT / p).exists()]
    if missing:
        pytest.fail(f"no build to rehearse with ({missing}): run `make book` first (make test does)")


def _copied_workflow(tmp_path, job: str, edit) -> tuple:
    """The workflow with ``job``'s steps edited; the rehearsal workspace and cache under tmp_path."""
    wf = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
    edit(wf["jobs"][job]["steps"])
    path = tmp_path / "ci.yml"
    path.write_text(yaml.safe_dump(wf, sort_keys=False), encoding="utf-8")
    return path, tmp_path / "base", tmp_path / "cache"


def _replace_run(command: str, by: str):
    def edit(steps):
        (step,) = [s for s in steps if s.get("run", "").strip() == command]
        step["run"] = by
    return edit


# --------------------------------------------------------------------------- the rehearsal


def test_every_test_job_is_rehearsed():
    assert ci_rehearsal.test_jobs(WF) == ["unit", "site", "nbval"]


@pytest.mark.rehearsal
@pytest.mark.parametrize("job", ci_rehearsal.test_jobs(WF))
def test_the_job_passes_on_a_fresh_clone_plus_the_artifact(job):
    result = rehearse(job)
    report = "\n".join(f"{s.seconds:7.1f} s {s.status:7} {s.name}" for s in result.steps)
    tail = "".join(result.log.read_text(encoding="utf-8", errors="replace").splitlines(keepends=True)[-60:])
    print(f"\n{job}: {result.seconds:.0f} s\n{report}\n--- the end of the job's log ({result.log}):\n{tail}")
    assert result.ok, f"{report}\nartifact files changed: {result.changed[:20]}\nlog: {result.log}\n{tail}"
    assert [s.status for s in result.steps if s.name.startswith("make")] == ["ok"]


# --------------------------------------------------------------------------- it can fail


def test_a_broken_job_command_fails_the_rehearsal(tmp_path):
    workflow, base, cache = _copied_workflow(tmp_path, "nbval", _replace_run("make nbval", "make nbval-typo"))
    result = rehearse("nbval", workflow, base=base, cache=cache)
    assert not result.ok and not result.changed
    assert [(s.name, s.status) for s in result.steps][-1] == ("make nbval", "failed")
    assert "No rule to make target 'nbval-typo'" in result.log.read_text(encoding="utf-8")


@pytest.mark.parametrize("command, changed", [
    ("touch _build/html/index.html", ["_build/html/index.html"]),  # a rebuild rewrites pages
    ("echo {} > _build/.jupyter_cache/executed.ipynb", ["_build/.jupyter_cache/executed.ipynb"]),
    ("rm _build/site-identity.json", ["_build/site-identity.json"]),
])
def test_a_job_that_writes_into_the_build_fails(tmp_path, command, changed):
    workflow, base, cache = _copied_workflow(tmp_path, "nbval", _replace_run("make nbval", command))
    result = rehearse("nbval", workflow, base=base, cache=cache)
    assert [s.status for s in result.steps][-1] == "ok"
    assert not result.ok and result.changed == changed


def test_the_artifact_lands_where_the_build_wrote_it(tmp_path):
    def elsewhere(steps):
        (download,) = [s for s in steps if s.get("uses", "").startswith("actions/download-artifact@")]
        download["with"]["path"] = "."
    workflow, base, cache = _copied_workflow(tmp_path, "nbval", elsewhere)
    with pytest.raises(RehearsalError, match="would land elsewhere"):
        rehearse("nbval", workflow, base=base, cache=cache)


def test_the_job_sees_the_workflow_env_and_only_the_artifact(tmp_path):
    """The env the workflow sets reaches the command; the worktree's untracked files do not."""
    untracked = ROOT / "_build" / "not-in-the-artifact.txt"
    untracked.write_text("x", encoding="utf-8")
    try:
        probe = ('test "$CI" = true && test "$GITHUB_EVENT_NAME" = pull_request && test "$PROBE" = set '
                 '&& test -z "${VIRTUAL_ENV:-}" && test -z "${MAKEFLAGS:-}" '
                 '&& test ! -e _build/not-in-the-artifact.txt && test -f _build/html/index.html '
                 '&& test -z "$(git status --porcelain --untracked-files=no)" '
                 '&& test "$(git rev-parse HEAD)" = ' + _head())

        def edit(steps):
            _replace_run("make nbval", probe)(steps)
            steps[-1]["env"] = {"PROBE": "set"}
        workflow, base, cache = _copied_workflow(tmp_path, "nbval", edit)
        result = rehearse("nbval", workflow, base=base, cache=cache)
        assert result.ok, result.log.read_text(encoding="utf-8")
    finally:
        untracked.unlink()


def _head() -> str:
    return subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True,
                          check=True).stdout.strip()


# --------------------------------------------------------------------------- the deploy job's input


def _pages_members(html, include_hidden: bool) -> list[str]:
    """What actions/upload-pages-artifact (v5, Linux) packs: its own tar command over ``path``."""
    excludes = ["--exclude=.git", "--exclude=.github"] + ([] if include_hidden else ["--exclude=.[^/]*"])
    tar = html.parent / "pages-artifact.tar"
    subprocess.run(["tar", "--dereference", "--hard-dereference", "--directory", str(html), "-cf", str(tar),
                    *excludes, "."], check=True)
    with tarfile.open(tar) as archive:
        members = [m.name.removeprefix("./") for m in archive.getmembers() if m.isfile()]
    tar.unlink()
    return members


def _missing_for_pages(members: list[str]) -> list[str]:
    """The site's entry points: the landing page, the sitemap, the 404 page, the in-browser app (its
    page, config and the attn wheel Pyodide installs) and the downloadable wheel."""
    wanted = {"index.html": r"index\.html", "sitemap.xml": r"sitemap\.xml", "404.html": r"404\.html",
              "lite/": r"lite/index\.html", "lite config": r"lite/jupyter-lite\.json",
              "lite wheel": r"lite/pyodide/attn-[\w.]+-py3-none-any\.whl",
              "wheel": r"wheels/attn-[\w.]+-py3-none-any\.whl"}
    return [what for what, pattern in wanted.items() if not any(re.fullmatch(pattern, m) for m in members)]


def test_the_deploy_job_gets_a_complete_site():
    deploy = WF["jobs"]["deploy"]
    (pages,) = [s for s in deploy["steps"] if s.get("uses", "").startswith("actions/upload-pages-artifact@")]
    assert any(s.get("uses", "").startswith("actions/deploy-pages@") for s in deploy["steps"])
    include_hidden = str(pages["with"].get("include-hidden-files", False)).lower() == "true"
    html = ROOT / pages["with"]["path"]
    members = _pages_members(html, include_hidden)
    assert _missing_for_pages(members) == []
    # Pages serves an Actions artifact as is (no Jekyll: `_static/` stays, no .nojekyll needed); the
    # hidden files the action leaves out must be ones no page asks for.
    left_out = sorted({str(p.relative_to(html)) for p in html.rglob("*") if p.is_file()} - set(members))
    assert all(any(part.startswith(".") for part in name.split("/")) for name in left_out)
    texts = [p.read_text(encoding="utf-8", errors="ignore") for p in html.rglob("*")
             if p.suffix in {".html", ".js", ".json"} and p.is_file()]
    for name in left_out:
        assert not any(name.split("/")[-1] in text for text in texts), f"{name} is asked for but not deployed"


def test_the_deploy_check_fails_on_an_incomplete_site():
    members = ["index.html", "sitemap.xml", "404.html", "lite/index.html", "lite/jupyter-lite.json",
               "lite/pyodide/attn-0.1.0-py3-none-any.whl", "wheels/attn-0.1.0-py3-none-any.whl"]
    assert _missing_for_pages(members) == []
    assert _missing_for_pages([m for m in members if not m.startswith("lite/")]) == [
        "lite/", "lite config", "lite wheel"]
    assert _missing_for_pages(members[1:]) == ["index.html"]


def test_what_the_jobs_kept_is_taken_over_and_nothing_else(tmp_path):
    root = tmp_path / "checkout"
    base = ci_rehearsal.rehearsal_base(root)
    try:
        for job, rel in (("unit", "_build/.stage-keys/tests/a.json"), ("site", "_build/.browser-visits/v.json"),
                         ("site", "_build/screenshots/p.png"), ("site", "_build/html/index.html")):
            path = base / job / "workspace" / root.name / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(job, encoding="utf-8")
        assert ci_rehearsal.adopt(root, jobs=["unit", "site", "nbval"]) == 3
        assert (root / "_build/.stage-keys/tests/a.json").read_text(encoding="utf-8") == "unit"
        assert (root / "_build/.browser-visits/v.json").is_file() and (root / "_build/screenshots/p.png").is_file()
        assert not (root / "_build/html").exists()  # the build's own outputs are never copied back
    finally:
        shutil.rmtree(base, ignore_errors=True)
