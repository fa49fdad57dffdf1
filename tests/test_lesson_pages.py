"""Static checks of the lesson pages (5.10 and 7.02) and their "use it in practice" PyTorch blocks.

* every lesson exercise page opens with a statement block, answers each question of the course's
  exercise in a labelled "Resposta" block, and includes (``literalinclude :pyobject:``) the source
  of the functions it introduces, from files and objects that exist;
* the functions those pages show read like their formula: one validation call, a short body;
* each lesson's PyTorch block is taken from the page source, executed with torch, and must print
  exactly the output the page shows (and the shapes its prose states).
"""
import ast
import contextlib
import io
import re
from pathlib import Path

import pytest
from helpers import function_node, literalincludes

ROOT = Path(__file__).resolve().parents[1]
BOOK = ROOT / "book"

# page -> (label prefix, number of answers = questions in the course's exercise, included objects)
EXERCISE_PAGES = {
    "aula510/ex1_mascara_padding.md": ("a510-ex1", 1, {
        "attn/core.py": ["_masked_softmax"],
        "attn/classic.py": ["additive_attention", "additive_scores", "dot_attention", "general_attention"],
    }),
    "aula510/ex2_luong_multi_cabeca.md": ("a510-ex2", 2, {
        "attn/multihead_luong.py": ["multihead_general_attention"],
    }),
    "aula510/ex3_copia_gru.md": ("a510-ex3", 2, {
        "attn/training/seq2seq.py": ["Seq2Seq._attn_decoder_forward", "Seq2Seq._attn_decoder_backward",
                                     "Seq2Seq.greedy_decode", "replace_weights"],
        "attn/training/gru.py": ["cell_forward", "cell_backward"],
        "attn/training/copytask.py": ["train"],
        "attn/training/loop.py": ["train"],
    }),
    "aula702/ex1_mascara.md": ("a702-ex1", 1, {
        "attn/core.py": ["_masked_softmax", "_attention"],
    }),
    "aula702/ex2_multi_cabeca.md": ("a702-ex2", 1, {
        "attn/multihead.py": ["MultiHeadAttention._heads", "_concat_heads", "MultiHeadAttention._forward"],
    }),
    "aula702/ex3_duas_frases.md": ("a702-ex3", 2, {
        "attn/self_attention.py": ["SelfAttention.project"],
    }),
}
# objects whose labelled include lives on a lesson page (the oral-exam page links these labels);
# masked_softmax and the Activity 4 functions are labelled on the Activity 4 pages
LABELLED_INCLUDES = {
    "codigo-additive-attention": "aula510/ex1_mascara_padding.md",
    "codigo-additive-scores": "aula510/ex1_mascara_padding.md",
    "codigo-dot-attention": "aula510/ex1_mascara_padding.md",
    "codigo-general-attention": "aula510/ex1_mascara_padding.md",
    "codigo-multihead-general-attention": "aula510/ex2_luong_multi_cabeca.md",
    "codigo-seq2seq-attn-decoder-forward": "aula510/ex3_copia_gru.md",
    "codigo-replace-weights": "aula510/ex3_copia_gru.md",
    "codigo-selfattention-project": "aula702/licao.md",
    "codigo-selfattention-forward": "aula702/licao.md",
    "codigo-softmax-jacobian": "aula702/licao.md",
    "codigo-softmax-saturation": "aula702/licao.md",
}
# the functions shown as their formula: every line of math carries a comment (issue 32: the
# meaning, default scale, mask broadcast and casts included, is in the body; validation is not)
FORMULA_FUNCTIONS = [
    ("attn/classic.py", "additive_attention"),
    ("attn/classic.py", "dot_attention"),
    ("attn/classic.py", "general_attention"),
    ("attn/classic.py", "additive_scores"),
    ("attn/multihead_luong.py", "multihead_general_attention"),
    ("attn/self_attention.py", "SelfAttention.project"),
    ("attn/self_attention.py", "SelfAttention.forward"),
    ("attn/core.py", "softmax"),
    ("attn/core.py", "masked_softmax"),
    ("attn/core.py", "scaled_dot_product_attention"),
    ("attn/multihead.py", "MultiHeadAttention.head_outputs"),
    ("attn/decoder.py", "transformer_decoder_block"),
    ("attn/decoder.py", "decoder_block_step"),
    ("attn/tiled.py", "tiled_attention"),
]
MAX_ANSWER_WORDS = 150

ADMONITION = re.compile(r"(?:\((?P<label>[\w-]+)\)=\n)?:::\{admonition\} (?P<title>[^\n]*)\n:class: (?P<cls>\w+)\n"
                        r"(?P<body>.*?)\n:::\n", re.S)


def _page(rel):
    return (BOOK / rel).read_text(encoding="utf-8")


def _includes(text, rel):
    """(source path relative to the repository, pyobject, label or None) for each literalinclude."""
    return [((BOOK / rel).parent.joinpath(inc["path"]).resolve().relative_to(ROOT).as_posix(), inc["pyobject"],
             inc["label"]) for inc in literalincludes(text)]


@pytest.mark.parametrize("rel", sorted(EXERCISE_PAGES))
def test_exercise_page_includes_the_source_it_introduces(rel):
    includes = _includes(_page(rel), rel)
    shown = {(source, obj) for source, obj, _ in includes}
    for source, objects in EXERCISE_PAGES[rel][2].items():
        for obj in objects:
            assert (source, obj) in shown, f"{rel} does not include {source} :pyobject: {obj}"
    for source, obj, _ in includes:
        assert obj is not None, f"{rel}: include of {source} without :pyobject:"  # a missing one fails the build


def test_labelled_includes_are_where_the_other_pages_link_them():
    pages = sorted({*EXERCISE_PAGES, "aula510/licao.md", "aula702/licao.md"})
    labels = {}
    for rel in pages:
        for _source, obj, label in _includes(_page(rel), rel):
            if label:
                assert label not in labels, f"label {label} defined twice"
                assert label == "codigo-" + re.sub(r"[._]+", "-", obj).lower(), (label, obj)
                labels[label] = rel
    assert labels == LABELLED_INCLUDES


@pytest.mark.parametrize("rel", sorted(EXERCISE_PAGES))
def test_statement_first_then_one_answer_per_question(rel):
    prefix, n_answers, _ = EXERCISE_PAGES[rel]
    text = _page(rel)
    blocks = [m.groupdict() for m in ADMONITION.finditer(text)]
    assert blocks and blocks[0]["cls"] == "enunciado" and blocks[0]["title"] == "Enunciado", rel
    # the statement comes right after the page title
    title_end = text.index("\n", text.index("\n# ") + 1)
    assert text.index(":::{admonition} Enunciado") - title_end < 40, "statement block is not first"
    answers = [b for b in blocks if b["cls"] == "resposta"]
    assert [b["label"] for b in answers] == [f"{prefix}-resposta-{i}" for i in range(1, n_answers + 1)]
    glued = 0
    for b in answers:
        assert b["title"].startswith("Resposta — "), b["title"]
        words = re.sub(r"\{[\w:]+\}`[^`]*`", "X", b["body"]).split()
        assert len(words) <= MAX_ANSWER_WORDS, f"{b['label']} has {len(words)} words"
        glued += b["body"].count("{glue:text}`")
        assert not re.search(r"\{glue:text\}`[^`]*:[^`]*`", b["body"]), "format numbers with attn.prose"
    assert glued > 0, f"{rel}: the answers state no glued number"


def _is_validation(value) -> bool:
    """A call to a validation helper (``check_*``, ``as_*``, ``positive_*``), or a tuple of them."""
    if isinstance(value, ast.Tuple):
        return all(_is_validation(v) for v in value.elts)
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr == "astype":
        return False
    func = value.func if isinstance(value, ast.Call) else None
    name = getattr(func, "id", getattr(func, "attr", ""))
    return name.startswith(("check_", "as_", "positive_"))


@pytest.mark.parametrize("source, obj", FORMULA_FUNCTIONS)
def test_shown_functions_comment_every_line_of_math(source, obj):
    node = function_node(source, obj)
    lines = (ROOT / source).read_text(encoding="utf-8").splitlines()
    math = [stmt for stmt in ast.walk(node) if isinstance(stmt, (ast.Assign, ast.AugAssign, ast.Return))
            and stmt.value is not None and not _is_validation(stmt.value)
            and any(isinstance(n, (ast.Call, ast.BinOp)) for n in ast.walk(stmt.value))
            and not any(isinstance(n, ast.JoinedStr) for n in ast.walk(stmt.value))]  # not an error message
    assert math, f"{obj}: no line of math found"
    for stmt in math:
        text = "\n".join(lines[stmt.lineno - 1:stmt.end_lineno])
        assert "#" in text, f"{obj}: no comment on {lines[stmt.lineno - 1].strip()!r}"


def test_default_score_factor_is_in_the_attention_body():
    """Where does the code divide by sqrt(d_k)? In the attention kernel itself, the formula the pages show."""
    node = function_node("attn/core.py", "_attention")
    assert "scale = 1 / math.sqrt(Q.shape[-1])" in ast.unparse(node)


# --- "use it in practice": the PyTorch blocks of the two lessons ------------------------------

PRACTICE = {  # lesson page -> (code-block name, shapes the prose states)
    "aula510/licao.md": ("l510-pratica-torch", ["(2, 5, 128)", "(2, 5, 10)"]),
    "aula702/licao.md": ("l702-pratica-torch", ["(1, 6, 8)", "(1, 6, 6)"]),
}


def _named_block(text, name):
    m = re.search(r"```\{code-block\} \w+\n:name: " + re.escape(name) + r"\n(?::caption:[^\n]*\n)?(.*?)\n```",
                  text, re.S)
    assert m, f"no code block named {name}"
    return m.group(1) + "\n"


@pytest.mark.parametrize("rel", sorted(PRACTICE))
def test_practice_block_prints_what_the_page_shows(rel):
    name, shapes = PRACTICE[rel]
    text = _page(rel)
    code, shown = _named_block(text, name), _named_block(text, name + "-saida")
    assert "{code-cell}" not in code  # a plain code block: the book build does not execute it
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, f"{rel}:{name}", "exec"), {"__name__": "__main__"})
    assert out.getvalue() == shown
    prose = text.replace(code, "").replace(shown, "")
    for shape in shapes:
        assert shape in shown and shape in prose, (rel, shape)


def test_dive_into_deep_learning_is_cited_on_both_lessons():
    assert "@book{zhang2023," in (BOOK / "references.bib").read_text(encoding="utf-8")
    for rel in PRACTICE:
        cited = ",".join(re.findall(r"\{cite(?::\w)?\}`([^`]*)`", _page(rel))).split(",")
        assert "zhang2023" in cited, rel
