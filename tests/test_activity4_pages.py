"""The Activity 4 pages as the grader reads them (issue 10).

Static checks on the page sources (book/atividade4/*.md):

* every function or class an exercise asks to implement is shown with a ``literalinclude`` of
  ``attn``'s own source (``:pyobject:``), under the label the other pages link (``codigo-...``);
* every question of the activity (seed 004) has a marked answer block, ``(a4-exN-resposta-M)=``
  followed by an admonition titled "Resposta" with class ``resposta``, short and backed by glued
  numbers;
* the grader's checklist (entrega.md) links every answer block and every included source.

And on the built site (_build/html, made by ``make book``): each included source is rendered as a
highlighted Python code block holding the real definition, and each answer block is there.
"""
from __future__ import annotations

import pathlib
import re

import bs4
import pytest
from helpers import docstring_node, function_node, includes, literalincludes

ROOT = pathlib.Path(__file__).resolve().parent.parent
PAGES_DIR = ROOT / "book" / "atividade4"
HTML_DIR = ROOT / "_build" / "html" / "book" / "atividade4"

# page -> (attn source file, pyobject, label) for each function the exercise asks to implement (the door)
# and for the kernel that holds its formula
REQUIRED_SOURCE = {
    "ex1_atencao_produto_escalar": [
        ("attn/core.py", "softmax", "codigo-softmax"),
        ("attn/core.py", "_softmax", "codigo-softmax-nucleo"),
        ("attn/core.py", "scaled_dot_product_attention", "codigo-scaled-dot-product-attention"),
        ("attn/core.py", "_attention", "codigo-attention-nucleo"),
        ("attn/core.py", "_masked_softmax", "codigo-masked-softmax"),  # the "-inf before softmax" step
        ("attn/core.py", "causal_mask", "codigo-causal-mask"),
    ],
    "ex2_multi_cabeca": [
        ("attn/multihead.py", "MultiHeadAttention.__init__", "codigo-multiheadattention"),
        ("attn/multihead.py", "MultiHeadAttention.forward", "codigo-multiheadattention-forward"),
        ("attn/multihead.py", "MultiHeadAttention._forward", "codigo-multiheadattention-nucleo"),
        ("attn/multihead.py", "MultiHeadAttention._heads", "codigo-multiheadattention-heads"),
        ("attn/multihead.py", "_concat_heads", "codigo-multiheadattention-concat-heads"),
    ],
    "ex3_bloco_encoder": [
        ("attn/encoder.py", "layer_norm", "codigo-layer-norm"),
        ("attn/encoder.py", "_layer_norm", "codigo-layer-norm-nucleo"),
        ("attn/encoder.py", "ffn", "codigo-ffn"),
        ("attn/encoder.py", "_ffn", "codigo-ffn-nucleo"),
        ("attn/encoder.py", "transformer_encoder_block", "codigo-transformer-encoder-block"),
        ("attn/encoder.py", "_encoder_block", "codigo-encoder-block-nucleo"),
    ],
    "ex4_codificacao_posicional": [
        ("attn/positional.py", "positional_encoding", "codigo-positional-encoding"),
    ],
}

# page -> (label prefix, number of questions the activity asks on that exercise, in seed order)
SEED_QUESTIONS = {
    "ex1_atencao_produto_escalar": ("a4-ex1", 2),  # heatmap pattern / token 1 vs 3 (and Q1·K1 vs K2); causal mask
    "ex2_multi_cabeca": ("a4-ex2", 2),  # cost of h = 2 vs h = 1; near head + far head
    "ex3_bloco_encoder": ("a4-ex3", 1),  # are the representations richer?
    "ex4_codificacao_posicional": ("a4-ex4", 3),  # frequencies; position 1 vs 50; shuffled tokens
}
MAX_ANSWER_WORDS = 160  # "at most about 150 words"; glue roles count as one word

ANSWER = re.compile(
    r"^\((?P<label>a4-ex\d-resposta-\d+)\)=\n:::\{admonition\} (?P<title>[^\n]*)\n(?P<body>.*?)^:::$",
    re.M | re.S,
)
GLUE_ROLE = re.compile(r"\{glue(?::text)?\}`[^`]*`")


def page_text(page: str) -> str:
    return (PAGES_DIR / f"{page}.md").read_text(encoding="utf-8")


def answers(text: str) -> dict[str, dict]:
    return {m.group("label"): m.groupdict() for m in ANSWER.finditer(text)}


PAGE_IDS = list(REQUIRED_SOURCE)
SOURCE_CASES = [(page, *item) for page, items in REQUIRED_SOURCE.items() for item in items]
SOURCE_IDS = [f"{page}:{obj}" for page, _, obj, _ in SOURCE_CASES]


def test_every_page_is_covered():
    assert sorted(p.stem for p in PAGES_DIR.glob("ex*.md")) == sorted(REQUIRED_SOURCE) == sorted(SEED_QUESTIONS)


@pytest.mark.parametrize("page, source_file, pyobject, label", SOURCE_CASES, ids=SOURCE_IDS)
def test_page_includes_the_source_of_each_required_function(page, source_file, pyobject, label):
    found = includes(page_text(page))
    assert pyobject in found, f"{page}.md has no literalinclude with :pyobject: {pyobject}"
    inc = found[pyobject]
    assert (PAGES_DIR / inc["path"]).resolve() == (ROOT / source_file).resolve(), inc["path"]
    assert inc["options"].get("language") == "python"
    assert inc["options"].get("caption", "").startswith(source_file)
    assert inc["label"] == label, f"the include of {pyobject} must carry the label ({label})="
    # the build shows the signature and the whole body without the docstring (tools/sphinx_site/listings.py):
    # a :lines: range would cut code when the docstring grows or shrinks
    assert "lines" not in inc["options"], f"{pyobject}: no :lines: option (the build hides the docstring)"


@pytest.mark.parametrize("page", PAGE_IDS)
def test_every_seed_question_has_a_marked_short_answer(page):
    prefix, n_questions = SEED_QUESTIONS[page]
    found = answers(page_text(page))
    expected = [f"{prefix}-resposta-{i}" for i in range(1, n_questions + 1)]
    assert sorted(found) == expected, f"{page}.md answers {sorted(found)}, expected {expected}"
    for label in expected:
        block = found[label]
        assert block["title"].startswith("Resposta"), f"{label}: title must start with 'Resposta'"
        assert block["body"].startswith(":class: resposta\n"), f"{label}: needs ':class: resposta'"
        words = len(GLUE_ROLE.sub("N", block["body"]).split()) - 2  # minus ":class: resposta"
        assert words <= MAX_ANSWER_WORDS, f"{label} has {words} words; move the rest into a dropdown"
        assert GLUE_ROLE.search(block["body"]), f"{label} states no glued number"


def test_answers_appear_in_seed_order():
    for page, (prefix, n_questions) in SEED_QUESTIONS.items():
        text = page_text(page)
        positions = [text.index(f"({prefix}-resposta-{i})=") for i in range(1, n_questions + 1)]
        assert positions == sorted(positions), page


def test_checklist_links_every_answer_and_every_included_source():
    entrega = (PAGES_DIR / "entrega.md").read_text(encoding="utf-8")
    linked = set(re.findall(r"\{ref\}`[^`<]*<([\w-]+)>`", entrega)) | set(re.findall(r"\{ref\}`([\w-]+)`", entrega))
    labels = [f"{prefix}-resposta-{i}" for prefix, n in SEED_QUESTIONS.values() for i in range(1, n + 1)]
    labels += [label for items in REQUIRED_SOURCE.values() for _, _, label in items]
    missing = [label for label in labels if label not in linked]
    assert not missing, f"entrega.md does not link {missing}"


# ----------------------------------------------------------------------------- the built site


def built_page(page: str):
    html = HTML_DIR / f"{page}.html"
    assert html.exists(), f"{html} missing: run `make book` first"
    return bs4.BeautifulSoup(html.read_text(encoding="utf-8"), "html.parser")


@pytest.mark.parametrize("page, source_file, pyobject, label", SOURCE_CASES, ids=SOURCE_IDS)
def test_included_source_renders_as_python_code(page, source_file, pyobject, label):
    soup = built_page(page)
    anchor = soup.find(id=label)
    assert anchor is not None, f"no element with id {label} in {page}.html"
    # Sphinx puts the label on an empty span inside the captioned code-block wrapper
    block = anchor if "literal-block-wrapper" in anchor.get("class", []) else anchor.find_parent(
        "div", class_="literal-block-wrapper")
    assert block is not None, f"{label} does not mark a captioned code block"
    code = block.select_one("div.highlight-python pre")
    assert code is not None, f"{label} is not rendered as a highlighted Python block"
    text = code.get_text()
    name = pyobject.split(".")[-1]
    assert re.search(rf"^\s*def {re.escape(name)}\(", text, re.M), f"{label} does not show def {name}("
    node = function_node(source_file, pyobject)
    source = (ROOT / source_file).read_text(encoding="utf-8").splitlines()
    doc = docstring_node(node)
    body = source[(doc.end_lineno if doc else node.body[0].lineno - 1):node.end_lineno]
    shown = [line.strip() for line in text.splitlines()]
    missing = [line.strip() for line in body if line.strip() and line.strip() not in shown]
    assert not missing, f"{label} does not show these lines of {pyobject}: {missing}"
    if doc is not None:  # the docstring is on the API page, not in the listing
        docstring = [line.strip() for line in source[doc.lineno - 1:doc.end_lineno] if line.strip()]
        assert not [line for line in docstring if line in shown], f"{label} shows the docstring of {pyobject}"
    caption = block.select_one(".code-block-caption")
    assert caption is not None and source_file in caption.get_text()


@pytest.mark.parametrize("page", PAGE_IDS)
def test_answer_blocks_render_with_their_labels(page):
    soup = built_page(page)
    prefix, n_questions = SEED_QUESTIONS[page]
    for i in range(1, n_questions + 1):
        block = soup.find(id=f"{prefix}-resposta-{i}")
        assert block is not None and "resposta" in block.get("class", []), f"{prefix}-resposta-{i}"
        title = block.select_one(".admonition-title")
        assert title is not None and title.get_text().startswith("Resposta")
    statement = soup.select("div.admonition.enunciado")
    assert len(statement) == 1, "each exercise page opens with one Enunciado block"


def include_problems(text: str) -> list[str]:
    """Each ``literalinclude`` of a ``:pyobject:`` in ``text`` that picks lines itself: the build hides
    the docstring (tools/sphinx_site/listings.py), and a ``:lines:`` range cuts code when it changes."""
    return [f"{inc['pyobject']}: no ':lines:' (the build hides the docstring)"
            for inc in literalincludes(text) if inc["pyobject"] is not None and "lines" in inc["options"]]


def test_no_include_picks_its_lines():
    """Any page (lessons included) shows the whole function: signature and body."""
    wrong = [f"{page.relative_to(ROOT)}: {problem}" for page in sorted((ROOT / "book").rglob("*.md"))
             for problem in include_problems(page.read_text(encoding="utf-8"))]
    assert not wrong, "\n".join(wrong)


def test_include_check_can_fail():
    page = ("```{literalinclude} ../../attn/encoder.py\n:language: python\n:pyobject: layer_norm\n"
            ":lines: 1-1,29-\n```\n")  # the line numbers of an older docstring
    assert include_problems(page) == ["layer_norm: no ':lines:' (the build hides the docstring)"]
    assert include_problems(page.replace(":lines: 1-1,29-\n", "")) == []
