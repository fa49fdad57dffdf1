"""Repository hygiene: lint, the import contracts, exact pins, and CI running the README's test command."""
import os
import pathlib
import re
import shutil
import subprocess

ROOT = pathlib.Path(__file__).resolve().parent.parent


def test_ruff_clean():
    exe = shutil.which("ruff", path=str(ROOT / ".venv" / "bin")) or shutil.which("ruff")
    assert exe, "ruff not installed (requirements-dev.txt)"
    paths = [p for p in ("attn", "tests", "tools", "bench") if (ROOT / p).exists()]
    result = subprocess.run([exe, "check", *paths], cwd=ROOT,
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_import_contracts_are_kept():
    """pyproject.toml's [tool.importlinter]: attn's layers, no import circle, no PyTorch in attn."""
    exe = shutil.which("lint-imports", path=str(ROOT / ".venv" / "bin")) or shutil.which("lint-imports")
    assert exe, "import-linter not installed (requirements-dev.txt)"
    result = subprocess.run([exe, "--no-cache", "--no-logo"], cwd=ROOT, capture_output=True, text=True,
                            env={**os.environ, "PYTHONPATH": "tools"})  # sphinx_site's import-path entry
    assert result.returncode == 0, result.stdout + result.stderr


def test_requirements_are_exact_pins():
    for name in ("requirements.txt", "requirements-dev.txt", "constraints.txt"):
        for line in (ROOT / name).read_text(encoding="utf-8").splitlines():
            line = line.split("#")[0].strip()
            if not line or line.startswith(("-r ", "-c ")):
                continue
            assert re.fullmatch(r"[A-Za-z0-9_.\-\[\]]+==[A-Za-z0-9_.+\-]+", line), f"{name}: {line!r} is not an exact pin"
    assert "jupyter-book==1." in (ROOT / "requirements.txt").read_text(encoding="utf-8")


def test_ci_runs_the_readme_test_command():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    first_block = re.search(r"```bash\n(.*?)```", readme, re.S).group(1)
    commands = [line.split("#")[0].strip() for line in first_block.splitlines() if line.strip()]
    targets = re.findall(r"^([\w-]+):", (ROOT / "Makefile").read_text(encoding="utf-8"), re.M)
    assert "make test" in commands and {c.split()[1] for c in commands} <= set(targets)
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    ci_commands = [line.strip() for line in ci.splitlines() if line.strip() and not line.startswith(("#", "set ", "cd "))]
    assert ci_commands == ["make test"]
