"""One computation per fact: a glue name used on two pages shows the same value on both.

A page that quotes another page's experiment glues the *same name* from the *same computation* (a
function in ``attn.experiments`` called with the same arguments), never a re-run with another seed.
The values are read from the executed notebooks, as ``tests/test_pages_static.py`` does.

Two checks:

1. every glue name glued on more than one page has one value (the ``text/plain`` of its bundle);
2. the oral-exam page quotes each exercise experiment under the exercise's own name, so check 1
   covers it (the list below is the contract; a missing name fails instead of passing silently).

A fixture proves that check 1 fails on two pages that disagree.
"""
from __future__ import annotations

import collections
import pathlib

import pytest
from export_executed import toc_pages
from helpers import EXECUTED, ROOT, page_glue_values

PAGES = toc_pages()


def glue_by_page() -> dict[str, dict[str, dict]]:
    values = {}
    for page in PAGES:
        executed = EXECUTED / page.relative_to(ROOT).with_suffix(".ipynb")
        assert executed.exists(), f"{executed} missing: run `make book` first"
        values[str(page.relative_to(ROOT).with_suffix(""))] = page_glue_values(executed)
    return values


def disagreements(values: dict[str, dict[str, dict]]) -> list[str]:
    """'name: page = value, page = value' for every glue name whose pages show different values."""
    seen: dict[str, dict[str, str]] = collections.defaultdict(dict)
    for page, glued in values.items():
        for name, bundle in glued.items():
            seen[name][page] = bundle.get("text/plain", repr(sorted(bundle)))
    return [f"{name}: " + ", ".join(f"{page} = {text}" for page, text in pages.items())
            for name, pages in sorted(seen.items()) if len(pages) > 1 and len(set(pages.values())) > 1]


# The oral-exam page quotes these facts of other pages (issue 18, item 14): page -> glue names.
ORAL = "book/atividade4/prova_oral"
QUOTED = {
    "book/atividade4/ex1_atencao_produto_escalar": ["ex1-mudanca-sem", "ex1-mudanca-com"],
    "book/atividade4/ex4_codificacao_posicional": ["ex4-dif-com-pe", "ex4-dif-sem-pe", "ex4-perm-com",
                                                   "ex4-perm-sem", "ex4-dist-1-50", "ex4-d-bloco"],
    "book/aula702/licao": ["l702-sat-sem-64-max", "l702-sat-com-64-max"],
}


@pytest.fixture(scope="module")
def values():
    return glue_by_page()


def test_a_glue_name_shared_by_two_pages_has_one_value(values):
    problems = disagreements(values)
    assert not problems, ("the same glue name shows different values on different pages (glue both from "
                          "one computation):\n  " + "\n  ".join(problems))


@pytest.mark.parametrize("page", sorted(QUOTED))
def test_oral_exam_page_quotes_the_exercise_under_its_own_name(values, page):
    missing = [name for name in QUOTED[page] if name not in values[page] or name not in values[ORAL]]
    assert not missing, f"not glued on both {page} and {ORAL}: {missing}"


def test_shared_fact_check_can_fail():
    same = {"a": {"k": {"text/plain": "'0,2874'"}}, "b": {"k": {"text/plain": "'0,2874'"}}}
    assert disagreements(same) == []
    differ = {"a": {"k": {"text/plain": "'0,2874'"}, "only-a": {"text/plain": "1"}},
              "b": {"k": {"text/plain": "'0,237'"}}}
    assert disagreements(differ) == ["k: a = '0,2874', b = '0,237'"]


def test_pages_are_found():
    assert any(pathlib.Path(p).name == "prova_oral.md" for p in PAGES)
