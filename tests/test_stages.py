"""The content keys that decide which slow stages `make test` re-runs (tools/stages.py).

A key must change with everything its stage checks (or the stage would be skipped on a change it
should catch) and only with that (or an edit would re-run work for nothing).
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))  # the build helpers are not a package
import stages  # noqa: E402


def _notebook(tmp_path: Path, prose: str = "Texto.", code: str = "print(1)", output: str = "1\n",
              tags=()) -> Path:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    cell = nbformat.v4.new_code_cell(code, metadata={"tags": list(tags)})
    cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=output)]
    nb.cells = [nbformat.v4.new_markdown_cell(prose), cell]
    path = tmp_path / "page.ipynb"
    path.write_text(nbformat.writes(nb), encoding="utf-8")
    return path


def test_nbval_key_ignores_prose_and_follows_code_outputs_and_tags(tmp_path):
    key = stages.nbval_key(_notebook(tmp_path))
    assert stages.nbval_key(_notebook(tmp_path, prose="Outro texto, outra frase.")) == key
    for changed in ({"code": "print(2)"}, {"output": "2\n"}, {"tags": ["nbval-ignore-output"]}):
        assert stages.nbval_key(_notebook(tmp_path, **changed)) != key, changed


def test_nbval_key_follows_attn_and_the_sanitizer(tmp_path, monkeypatch):
    page = _notebook(tmp_path)
    key = stages.nbval_key(page)
    fake_root = tmp_path / "repo"
    (fake_root / "attn").mkdir(parents=True)
    (fake_root / "tests").mkdir()
    (fake_root / "attn" / "core.py").write_text("x = 1\n", encoding="utf-8")
    (fake_root / "tests" / "nbval_sanitize.cfg").write_text("[a]\n", encoding="utf-8")
    monkeypatch.setattr(stages, "ROOT", fake_root)
    base = stages.nbval_key(page)
    assert base != key
    (fake_root / "attn" / "core.py").write_text("x = 2\n", encoding="utf-8")
    edited = stages.nbval_key(page)
    assert edited != base
    (fake_root / "tests" / "nbval_sanitize.cfg").write_text("[b]\n", encoding="utf-8")
    assert stages.nbval_key(page) != edited


def test_todo_lists_a_notebook_until_it_passes_and_again_when_it_changes(tmp_path, monkeypatch, capsys):
    executed = tmp_path / "jupyter_execute"
    executed.mkdir()
    page = _notebook(executed)
    monkeypatch.setattr(stages, "ROOT", tmp_path)
    monkeypatch.setattr(stages, "EXECUTED", executed)
    monkeypatch.setattr(stages, "STAMPS", tmp_path / "keys")

    def todo() -> list[str]:
        stages.main(["todo", "nbval"])
        return capsys.readouterr().out.split()

    assert todo() == ["jupyter_execute/page.ipynb"]
    stages.main(["pass", "nbval", str(page)])
    assert todo() == []
    nb = json.loads(page.read_text(encoding="utf-8"))
    nb["cells"][1]["outputs"][0]["text"] = "changed\n"
    page.write_text(json.dumps(nb), encoding="utf-8")
    assert todo() == ["jupyter_execute/page.ipynb"]


@pytest.mark.parametrize("argv", [[], ["todo"], ["run", "nbval"], ["todo", "unit"], ["todo", "site"]])
def test_bad_usage_is_refused(argv, capsys):
    assert stages.main(argv) == 2


def test_a_kept_browser_result_lasts_while_its_files_are_the_same(tmp_path, monkeypatch):
    import test_site

    monkeypatch.setattr(test_site, "HTML_DIR", tmp_path / "html")
    monkeypatch.setattr(test_site, "VISITS_DIR", tmp_path / "visits")
    (tmp_path / "html").mkdir()
    page, style = tmp_path / "html" / "p.html", tmp_path / "html" / "s.css"
    page.write_text("<p>a</p>", encoding="utf-8")
    style.write_text("p {}", encoding="utf-8")
    base = "http://127.0.0.1:1234/site/"
    result = {"url": base + "p.html", "links": [base + "q.html#x"], "errors": []}
    test_site.keep_result("visit p", "ctx", base, ["p.html", "s.css"], result)
    other = "http://127.0.0.1:999/site/"  # the next run's server: the addresses follow it
    assert test_site.kept_result("visit p", "ctx", other) == {
        "url": other + "p.html", "links": [other + "q.html#x"], "errors": []}
    assert test_site.kept_result("visit p", "other test code", other) is None
    assert test_site.kept_result("visit q", "ctx", other) is None
    style.write_text("p { color: red }", encoding="utf-8")  # a file the visit was served changed
    assert test_site.kept_result("visit p", "ctx", other) is None
