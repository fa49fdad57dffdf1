"""The oral-exam preparation page (book/atividade4/prova_oral.md), checked on its source.

For each Activity 4 exercise: 4 to 6 questions, each a collapsed dropdown whose answer links the
included source (a ``codigo-*`` label on the Activity 4 pages) and a section of the site, and states
its numbers through glue roles of this page.
"""
from __future__ import annotations

import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parent.parent
PAGE = ROOT / "book" / "atividade4" / "prova_oral.md"
SECTION = re.compile(r"^## Exercício (\d) ", re.M)
DROPDOWN = re.compile(r"^:::\{dropdown\} (?P<title>[^\n]+)\n(?P<body>.*?)^:::$", re.M | re.S)
REF = re.compile(r"\{ref\}`(?:[^`<]*<)?(?P<label>[\w-]+)>?`")
GLUE_KEY = re.compile(r"\{glue(?::\w*)?\}`(?P<key>[\w-]+)")


def _sections() -> dict[int, str]:
    text = PAGE.read_text(encoding="utf-8")
    starts = list(SECTION.finditer(text))
    return {int(m.group(1)): text[m.end():(starts[i + 1].start() if i + 1 < len(starts) else len(text))]
            for i, m in enumerate(starts)}


def test_every_exercise_has_four_to_six_questions():
    sections = _sections()
    assert sorted(sections) == [1, 2, 3, 4]
    for number, body in sections.items():
        assert 4 <= len(DROPDOWN.findall(body)) <= 6, f"Exercise {number}"


def test_every_answer_links_included_code_and_a_section():
    for number, body in _sections().items():
        for match in DROPDOWN.finditer(body):
            refs = [m.group("label") for m in REF.finditer(match.group("body"))]
            title = match.group("title")
            assert any(r.startswith("codigo-") for r in refs), f"Ex {number} '{title}': no included code"
            assert any(not r.startswith("codigo-") for r in refs), f"Ex {number} '{title}': no section"


def glued_keys(text: str):
    """Matcher of the keys a page's cells glue (f-string keys match any word in place of {...})."""
    glued = set(re.findall(r'glue\(f?"([\w{}+ -]+)"', text))
    literal = {k for k in glued if "{" not in k}
    patterns = [re.compile(re.sub(r"\\\{[^}]*\\\}", r"[\\w-]+", re.escape(k)) + "$") for k in glued - literal]
    return lambda key: key in literal or any(p.match(key) for p in patterns)


def test_a_key_of_another_page_is_glued_there_too():
    # A key this page uses but does not glue fails the strict build (myst-nb: "No key ... found in glue
    # data for this document"). A key of another page is a fact that page computes: this page glues it
    # from the same function (tests/test_shared_facts.py compares the values); every other key is po-*.
    text = PAGE.read_text(encoding="utf-8")
    used = set(GLUE_KEY.findall(text))
    others = [glued_keys(p.read_text(encoding="utf-8")) for p in (ROOT / "book").rglob("*.md") if p != PAGE]
    orphans = {k for k in used if not k.startswith("po-") and not any(other(k) for other in others)}
    assert used and not orphans, f"keys that are neither po-* nor glued by the page they quote: {orphans}"


def test_glued_key_matcher_can_fail():
    matches = glued_keys('glue(f"l702-sat-{rotulo}-{dk}-max", x)\nglue("po-a", 1)')
    assert matches("l702-sat-sem-64-max") and matches("po-a")
    assert not matches("l702-sat-sem-64-grad") and not matches("po-b")
