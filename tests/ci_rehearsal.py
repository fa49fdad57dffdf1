"""Rehearse the workflow's test jobs on this machine, each as GitHub Actions would run it.

A job starts from a fresh checkout plus the build job's artifact, nothing else. So does its
rehearsal: a fresh clone of this repository's HEAD, the artifact's paths (exactly the ``path:`` list
of the build job's upload step) copied from the build in ``_build/``, then the job's own steps in
order: ``actions/cache`` restores from (and saves to) a local stand-in for GitHub's cache, under the
key the workflow computes; every ``run:`` command runs through ``bash -e`` (GitHub's default shell) in
the clone, with the environment the workflow sets; ``actions/upload-artifact`` checks its paths
exist when the step says ``if-no-files-found: error``. A rehearsal passes only if every step succeeds
and the artifact's files are untouched (same bytes, same mtimes, none added or removed: the job did
not build the book again and executed no notebook into the execution cache).

As on GitHub, each job runs on its own runner, so the three test jobs can run side by side: each
has its own workspace and its own stand-in for GitHub's cache under ``rehearsal_base(root) / job``.
A job's workspace path stays the same from one rehearsal to the next (on GitHub every run sees
``/__w/<repo>/<repo>``), so the virtual environment a job saved to the cache works when its next
rehearsal restores it. A first rehearsal misses, as the three jobs of a repository's first run do,
and each installs its own. Cache entries are hard links (saving and restoring copies no bytes): a
job's files are never written in place once it has ended. The rehearsal runs on the host, not in the
workflow's ``python:3.11-bookworm`` container (the host is Debian bookworm too), and the event is a
pull request.

Stand-ins, each for a value the workflow sets that cannot work offline here:
``PIP_EXTRA_INDEX_URL`` (PyTorch's CPU index): this machine's pip configuration serves the CPU torch
wheel, so the rehearsal keeps it instead.

``python tests/ci_rehearsal.py [JOB ...]`` rehearses the named test jobs (default: all) and prints
each step's time; ``--adopt`` copies back what the jobs kept (``ADOPTED``); ``tests/test_ci_rehearsal.py`` is the test.
"""

from __future__ import annotations

import dataclasses
import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
WORKFLOW = ROOT / ".github" / "workflows" / "ci.yml"
EVENT = "pull_request"
STAND_INS = {"PIP_EXTRA_INDEX_URL": "https://download.pytorch.org/whl/cpu"}
# A rehearsed job may run tests that rehearse (trivially) again; never deeper than that.
DEPTH_VAR = "CI_REHEARSAL_DEPTH"
MAX_DEPTH = 2
HANG_FACTOR = 4


class RehearsalError(RuntimeError):
    """The workflow asks for something this rehearsal cannot stand in for."""


@dataclasses.dataclass
class Step:
    name: str
    status: str  # "ok", "failed" or "skipped"
    seconds: float


@dataclasses.dataclass
class Rehearsal:
    job: str
    steps: list[Step]
    changed: list[str]  # artifact files modified, added or removed by the job
    log: Path

    @property
    def ok(self) -> bool:
        return all(step.status != "failed" for step in self.steps) and not self.changed

    @property
    def seconds(self) -> float:
        return sum(step.seconds for step in self.steps)


# --------------------------------------------------------------------------- reading the workflow


def load(workflow: Path = WORKFLOW) -> dict:
    return yaml.safe_load(workflow.read_text(encoding="utf-8"))


def _uses(step: dict, action: str) -> bool:
    return step.get("uses", "").split("@")[0] == action


def artifact(wf: dict) -> tuple[str, list[str], bool]:
    """The build job's upload: artifact name, its ``path:`` list, whether hidden files go in."""
    (upload,) = [s for s in wf["jobs"]["build"]["steps"] if _uses(s, "actions/upload-artifact")]
    paths = [line.strip() for line in upload["with"]["path"].splitlines() if line.strip()]
    return upload["with"]["name"], paths, str(upload["with"].get("include-hidden-files", False)).lower() == "true"


def test_jobs(wf: dict) -> list[str]:
    """Jobs that test the build's artifact: they download it and run commands (deploy runs none)."""
    name = artifact(wf)[0]
    return [job_name for job_name, job in wf["jobs"].items()
            if any(_uses(s, "actions/download-artifact") and s.get("with", {}).get("name") == name
                   for s in job["steps"])
            and any("run" in s for s in job["steps"])]


# --------------------------------------------------------------------------- expressions


def _hash_files(workspace: Path, *patterns: str) -> str:
    """Stands in for ``hashFiles()``: one digest of the matched files (equal files, equal key)."""
    files = sorted({p for pattern in patterns for p in workspace.glob(pattern) if p.is_file()})
    digest = hashlib.sha256()
    for path in files:
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest() if files else ""


class Context:
    """The values ``${{ }}`` expressions and ``if:`` conditions of a pull-request run can name."""

    def __init__(self, workspace: Path):
        self.workspace = workspace
        self.outputs: dict[str, dict[str, str]] = {}
        self.failed = False

    def value(self, expr: str) -> str:
        expr = expr.strip()
        if expr == "runner.os":
            return "Linux"
        if expr == "github.event_name":
            return EVENT
        if m := re.fullmatch(r"steps\.([\w-]+)\.outputs\.([\w-]+)", expr):
            return self.outputs.get(m.group(1), {}).get(m.group(2), "")
        if m := re.fullmatch(r"hashFiles\((.*)\)", expr):
            return _hash_files(self.workspace, *re.findall(r"'([^']*)'", m.group(1)))
        raise RehearsalError(f"expression not rehearsed: ${{{{ {expr} }}}}")

    def substitute(self, text: str) -> str:
        return re.sub(r"\$\{\{(.*?)\}\}", lambda m: self.value(m.group(1)), str(text))

    def condition(self, expr: str | None) -> bool:
        """An ``if:``; without ``always()`` (or ``failure()``), a step after a failure is skipped."""
        if expr is None:
            return not self.failed
        expr = str(expr).strip().removeprefix("${{").removesuffix("}}")
        status_checked = re.search(r"\b(always|failure|cancelled)\(\)", expr)
        python = re.sub(r"'([^']*)'", lambda m: repr(m.group(1)), expr)
        python = python.replace("&&", " and ").replace("||", " or ")
        python = re.sub(r"!(?!=)", " not ", python)
        python = re.sub(r"\b(always|success|failure|cancelled)\(\)",
                        lambda m: repr({"always": True, "success": not self.failed,
                                        "failure": self.failed, "cancelled": False}[m.group(1)]), python)
        python = re.sub(r"\b(github\.[\w.]+|runner\.os|steps\.[\w.-]+)", lambda m: repr(self.value(m.group(1))),
                        python)
        if re.search(r"[A-Za-z_]\w*\s*\(", python):
            raise RehearsalError(f"condition not rehearsed: {expr}")
        result = bool(eval(python, {"__builtins__": {}}, {}))  # noqa: S307 (only literals and operators left)
        return result if status_checked else result and not self.failed


# --------------------------------------------------------------------------- the environment


def _base_env(workspace: Path, runner_temp: Path, repository: str) -> dict[str, str]:
    """What a runner gives every job: the machine's basics (PATH without this worktree), its pip
    configuration (PIP_*) and trust store (the CA bundle variables), and GitHub's default variables.
    Nothing else leaks in (no MAKEFLAGS, VIRTUAL_ENV, PYTEST_* or PYTHONPATH of the process that
    started the rehearsal)."""
    keep = ("HOME", "LANG", "LC_ALL", "TERM", "USER", "TZ")
    env = {k: v for k, v in os.environ.items()
           if k in keep or k.startswith("PIP_") or re.search(r"CA_CERTS|CAINFO|CERT_(FILE|DIR)|CA_BUNDLE", k)}
    outside = [p for p in os.environ.get("PATH", "").split(os.pathsep)
               if p and not Path(p).resolve().is_relative_to(ROOT)]
    env["PATH"] = os.pathsep.join(outside)
    env.update({
        "CI": "true", "GITHUB_ACTIONS": "true", "GITHUB_EVENT_NAME": EVENT, "GITHUB_REF": "refs/pull/1/merge",
        "GITHUB_REPOSITORY": repository, "GITHUB_SERVER_URL": "https://github.com",
        "GITHUB_API_URL": "https://api.github.com", "GITHUB_WORKSPACE": str(workspace),
        "RUNNER_OS": "Linux", "RUNNER_TEMP": str(runner_temp), "TMPDIR": str(runner_temp),
        DEPTH_VAR: str(int(os.environ.get(DEPTH_VAR, "0")) + 1),
    })
    return env


def _workflow_env(ctx: Context, *levels: dict) -> dict[str, str]:
    env: dict[str, str] = {}
    for level in levels:
        for key, value in (level or {}).items():
            value = ctx.substitute(value)
            if key in STAND_INS:
                if value != STAND_INS[key]:
                    raise RehearsalError(f"{key}={value!r}: the stand-in covers only {STAND_INS[key]!r}")
                continue  # this machine's pip configuration stands in (module docstring)
            env[key] = value
    return env


def _read_key_values(path: Path) -> dict[str, str]:
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    if "<<" in text:
        raise RehearsalError(f"multi-line values in {path.name} are not rehearsed")
    return dict(line.split("=", 1) for line in text.splitlines() if "=" in line)


# --------------------------------------------------------------------------- files


def snapshot(root: Path, paths: list[str]) -> dict[str, tuple[str, int]]:
    """Every file under ``paths`` (relative to ``root``): its sha256 and mtime."""
    files: dict[str, tuple[str, int]] = {}
    for rel in paths:
        top = root / rel
        for path in ([top] if top.is_file() else sorted(p for p in top.rglob("*") if p.is_file())):
            files[str(path.relative_to(root))] = (hashlib.sha256(path.read_bytes()).hexdigest(),
                                                  path.stat().st_mtime_ns)
    return files


def _changed(before: dict, after: dict) -> list[str]:
    return sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))


def _copy_artifact(build_root: Path, workspace: Path, paths: list[str], hidden: bool, download: dict,
                   name: str) -> None:
    """download-artifact: the upload's files under its root (the paths' common parent), at ``path:``."""
    if download.get("name") != name:
        raise RehearsalError(f"downloads {download.get('name')!r}, the build uploads {name!r}")
    # upload-artifact's root: the paths' least common ancestor (a lone directory is its own root)
    common = (os.path.commonpath(paths) if len(paths) > 1 or (build_root / paths[0]).is_dir()
              else str(Path(paths[0]).parent))
    if os.path.normpath(download.get("path", ".")) != os.path.normpath(common):
        raise RehearsalError(f"the artifact's root is {common!r}; downloaded to {download.get('path')!r}, "
                             "its files would land elsewhere than the build wrote them")
    ignore = None if hidden else shutil.ignore_patterns(".*")
    for rel in paths:
        source, target = build_root / rel, workspace / rel
        if not source.exists():
            raise RehearsalError(f"{rel}: not in the build (run `make book` first)")
        if not hidden and source.name.startswith("."):
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_dir():
            shutil.copytree(source, target, symlinks=True, ignore=ignore)
        else:
            shutil.copy2(source, target)


def _repository(build_root: Path) -> str:
    """The owner/name the build was made for (its site-identity record), as GITHUB_REPOSITORY."""
    record = build_root / "_build" / "site-identity.json"
    url = json.loads(record.read_text(encoding="utf-8"))["repository_url"] if record.exists() else ""
    return "/".join(url.rstrip("/").split("/")[-2:]) if url.count("/") >= 4 else "student/fork"


@contextmanager
def _workspace_lock(base: Path):
    base.mkdir(parents=True, exist_ok=True)
    with open(base / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def rehearsal_base(root: Path = ROOT) -> Path:
    """One directory per checkout; each job's workspace, log and cache stand-in live in ``<base>/<job>``."""
    tag = hashlib.sha256(str(root).encode()).hexdigest()[:10]
    return Path(tempfile.gettempdir()) / f"ci-rehearsal-{tag}"


def _link_tree(source: Path, target: Path) -> None:
    """A copy of ``source`` at ``target`` made of hard links (a cache entry, saved or restored)."""
    shutil.copytree(source, target, symlinks=True, copy_function=os.link)


# --------------------------------------------------------------------------- one job


def rehearse(job: str, workflow: Path = WORKFLOW, root: Path = ROOT, base: Path | None = None,
             cache: Path | None = None) -> Rehearsal:
    """Run ``job`` of ``workflow`` on a fresh clone of ``root``'s HEAD plus the artifact from ``root``."""
    if int(os.environ.get(DEPTH_VAR, "0")) >= MAX_DEPTH:
        raise RehearsalError("a rehearsal inside a rehearsal inside a rehearsal: refusing to recurse")
    wf = load(workflow)
    if job not in wf["jobs"]:
        raise RehearsalError(f"no job {job!r} in {workflow}")
    name, paths, hidden = artifact(wf)
    base = base or rehearsal_base(root) / job
    cache = cache or base / "cache"
    with _workspace_lock(base):
        workspace = base / "workspace" / root.name
        runner_temp = base / "runner-temp"
        for directory in (workspace, runner_temp):
            shutil.rmtree(directory, ignore_errors=True)
        runner_temp.mkdir(parents=True)
        log = base / f"{job}.log"
        ctx = Context(workspace)
        spec = wf["jobs"][job]
        env = _base_env(workspace, runner_temp, _repository(root))
        steps: list[Step] = []
        before: dict | None = None
        saves: list[tuple[Path, Path]] = []
        with open(log, "w", encoding="utf-8") as out:
            for index, step in enumerate(spec["steps"]):
                label = step.get("name") or step.get("uses", "").split("@")[0] or step.get("run", "").split("\n")[0]
                if not ctx.condition(step.get("if")):
                    steps.append(Step(label, "skipped", 0.0))
                    continue
                out.write(f"\n::group::{label}\n")
                out.flush()
                start = time.monotonic()
                ok = _run_step(step, index, ctx, env, spec, wf, workspace, runner_temp, root, cache,
                               (name, paths, hidden), saves, out)
                steps.append(Step(label, "ok" if ok else "failed", time.monotonic() - start))
                ctx.failed |= not ok
                if before is None and _uses(step, "actions/download-artifact"):
                    before = snapshot(workspace, paths)
            if before is None:
                raise RehearsalError(f"{job} never downloads the artifact")
            changed = _changed(before, snapshot(workspace, paths))
            if not ctx.failed:  # actions/cache saves in its post step, after a successful job
                for source, entry in saves:
                    if source.exists() and not entry.exists():
                        start = time.monotonic()
                        _link_tree(source, entry.with_suffix(".tmp"))
                        entry.with_suffix(".tmp").rename(entry)
                        steps.append(Step(f"Post: save {entry.name[:40]}", "ok", time.monotonic() - start))
    return Rehearsal(job, steps, changed, log)


def _run_step(step, index, ctx, env, spec, wf, workspace, runner_temp, root, cache, upload, saves, out) -> bool:
    name, paths, hidden = upload
    uses = step.get("uses", "").split("@")[0]
    if uses == "actions/checkout":
        if step.get("with", {}).get("persist-credentials") is not False:
            raise RehearsalError("a checkout keeps the token in the workspace (persist-credentials)")
        head = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True,
                              check=True).stdout.strip()
        workspace.parent.mkdir(parents=True, exist_ok=True)
        for command in (["git", "clone", "--quiet", "--no-checkout", str(root), str(workspace)],
                        ["git", "-C", str(workspace), "checkout", "--quiet", "--detach", head]):
            subprocess.run(command, stdout=out, stderr=subprocess.STDOUT, check=True)
        return True
    if uses == "actions/cache":
        with_ = step["with"]
        key = ctx.substitute(with_["key"])
        entries = [line.strip() for line in with_["path"].splitlines() if line.strip()]
        pairs = []
        for rel in entries:
            if rel.startswith("~") or ".." in Path(rel).parts:
                raise RehearsalError(f"cache path {rel!r} outside the workspace is not rehearsed")
            pairs.append((workspace / rel, cache / f"{key}--{rel.replace('/', '_')}"))
        hit = all(entry.exists() for _, entry in pairs)
        for target, entry in pairs if hit else []:
            target.parent.mkdir(parents=True, exist_ok=True)
            _link_tree(entry, target)
        if not hit:  # saved in the post step (actions/cache does not save over an exact hit)
            saves.extend(pairs)
        out.write(f"cache {'hit' if hit else 'miss'}: {key}\n")
        return True
    if uses == "actions/download-artifact":
        _copy_artifact(root, workspace, paths, hidden, step.get("with", {}), name)
        return True
    if uses == "actions/upload-artifact":
        with_ = step["with"]
        found = [p for line in with_["path"].splitlines() if line.strip()
                 for p in [workspace / line.strip()] if p.exists() and (p.is_file() or any(p.rglob("*")))]
        if step.get("id"):
            ctx.outputs[step["id"]] = {"artifact-url": f"https://github.com/rehearsal/artifacts/{with_['name']}"}
        if not found and with_.get("if-no-files-found", "warn") == "error":
            out.write(f"upload {with_['name']}: no files at {with_['path']!r}\n")
            return False
        return True
    if uses:
        raise RehearsalError(f"step {index} uses {uses}: not rehearsed")
    step_env = {**env, **_workflow_env(ctx, wf.get("env"), spec.get("env"), step.get("env"))}
    output, env_file, summary = (runner_temp / f"{kind}-{index}" for kind in ("output", "env", "summary"))
    for path in (output, env_file, summary):
        path.touch()
    step_env.update(GITHUB_OUTPUT=str(output), GITHUB_ENV=str(env_file), GITHUB_STEP_SUMMARY=str(summary))
    script = runner_temp / f"step-{index}.sh"
    script.write_text(step["run"], encoding="utf-8")
    process = subprocess.Popen(["bash", "-e", str(script)], cwd=workspace, env=step_env, stdout=out,
                               stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
    # A guard against a hung step, not a speed check (tests never assert on time): HANG_FACTOR times the
    # job's timeout-minutes, because this shared machine is slower than a runner; the step's whole
    # process group goes.
    limit = HANG_FACTOR * float(spec.get("timeout-minutes", 360))
    try:
        returncode = process.wait(timeout=60 * limit)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, 9)
        process.wait()
        out.write(f"hung: killed after {limit:.0f} minutes\n")
        returncode = -9
    if step.get("id"):
        ctx.outputs[step["id"]] = _read_key_values(output)
    env.update(_read_key_values(env_file))
    return returncode == 0


# --------------------------------------------------------------------------- command line


# What a rehearsed job leaves that also holds here: results keyed on their own inputs' bytes (the
# tests' records, tests/_memo.py; the browser visits and their screenshots, tests/test_site.py), so
# the first incremental `make test` after a fresh-clone one reuses them instead of running all again.
ADOPTED = ("_build/.stage-keys/tests", "_build/.browser-visits", "_build/screenshots")


def adopt(root: Path = ROOT, jobs=None) -> int:
    """Copy into ``root`` what each rehearsed job's workspace kept (ADOPTED); return the file count."""
    count = 0
    for job in jobs or test_jobs(load()):
        workspace = rehearsal_base(root) / job / "workspace" / root.name
        for rel in ADOPTED:
            source = workspace / rel
            if source.is_dir():
                shutil.copytree(source, root / rel, dirs_exist_ok=True)
                count += sum(1 for p in source.rglob("*") if p.is_file())
    return count


def main(argv: list[str]) -> int:
    if argv == ["--adopt"]:
        print(f"adopted {adopt()} kept result file(s) from the rehearsed jobs' workspaces")
        return 0
    wf = load()
    jobs = argv or test_jobs(wf)
    failed = False
    for job in jobs:
        result = rehearse(job)
        print(f"\n{job}: {'passed' if result.ok else 'FAILED'} in {result.seconds:.0f} s (log: {result.log})")
        for step in result.steps:
            print(f"  {step.seconds:7.1f} s  {step.status:7}  {step.name}")
        if result.changed:
            print(f"  artifact files changed by the job: {result.changed[:10]}")
        failed |= not result.ok
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
