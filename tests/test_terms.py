"""One term per concept: the variants the glossary rejects never appear in reader-facing text.

The glossary page (book/glossario.md) holds the list, in the definition list of its section under the
label ``(glossario-variantes)=``: each term is a rejected form (or several forms of one word, separated by
commas), and its definition names the form to use in bold. This test reads that list, then searches every page
of the book and the prompt files the pages include (outputs/*.md) for the rejected forms, in what a
reader reads:

* the Markdown prose (not inline code, math, URLs, labels or reference targets);
* the comments and the string literals of code cells (titles, axis labels, printed text), but not
  names such as glue keys;
* the figure captions and alt texts of cell metadata.

The ``attn`` package, the README and the tests are English and are not searched. A fixture proves
that the check fails on each kind of text.
"""
from __future__ import annotations

import io
import pathlib
import re
import tokenize

import jupytext
import pytest
from markdown_it import MarkdownIt
from mdit_py_plugins.deflist import deflist_plugin

ROOT = pathlib.Path(__file__).resolve().parent.parent
GLOSSARY = ROOT / "book" / "glossario.md"
# every page of the book (notebook pages and plain Markdown pages alike) and the prompt files
SOURCES = sorted((ROOT / "book").rglob("*.md")) + sorted((ROOT / "outputs").glob("*.md"))
IDS = [str(p.relative_to(ROOT)) for p in SOURCES]
VARIANTS_LABEL = "(glossario-variantes)="


_DEFLIST = MarkdownIt("commonmark").use(deflist_plugin)


def glossary_variants(text: str) -> dict[str, str]:
    """Rejected form -> the term to use, from the definition list of the glossary's section under
    ``(glossario-variantes)=`` (up to the next heading): each comma-separated form of a term maps to
    the bold text of its definition ("estourar, estouro" for **estourar** ou **estouro**)."""
    section = []
    for line in text[text.index(VARIANTS_LABEL):].splitlines()[1:]:
        if line.startswith("#") and section:  # the next heading ends the section
            break
        section.append(line)
    tokens = _DEFLIST.parse("\n".join(section))
    rows = {}
    for i, token in enumerate(tokens):
        if token.type != "dt_open":
            continue
        forms = tokens[i + 1].content  # the term's inline markdown, as written ("quase *one-hot*")
        start = next(j for j in range(i, len(tokens)) if tokens[j].type == "dd_open")
        definition = next(t for t in tokens[start:] if t.type == "inline")
        use = ", ".join(re.findall(r"\*\*(.+?)\*\*", definition.content))
        for form in forms.split(","):
            rows[form.strip()] = use
    return rows


def variant_pattern(variant: str) -> re.Pattern:
    """Whole words, any case, each word also in the plural; emphasis marks are ignored."""
    words = variant.replace("*", "").split()
    return re.compile(r"(?<![\w-])" + r"\s+".join(re.escape(w) + "s?" for w in words) + r"(?![\w-])",
                      re.IGNORECASE)


_FENCE = re.compile(r"^(`{3,})\{?([\w:-]*)\}?[^\n]*\n(.*?)^\1\s*$", re.M | re.S)  # ``` fences
# backtick-fenced directives whose body is prose; any other ``` fence is code (colon fences are prose)
_PROSE_DIRECTIVES = {"admonition", "dropdown", "note", "tip", "hint", "important", "warning", "caution",
                     "attention", "exercise", "solution", "figure", "epigraph", "margin", "sidebar", "topic",
                     "list-table", "table", "glossary"}
_NOT_PROSE = [
    re.compile(r"`[^`\n]*`(?!`)"),                     # inline code (a role's target is removed with it)
    re.compile(r"\$\$.*?\$\$", re.S), re.compile(r"\$[^$\n]+\$"),   # math
    re.compile(r"https?://\S+"),
    re.compile(r"^\([\w-]+\)=\s*$", re.M),             # MyST labels
    re.compile(r"^:(label|name|class|tags|caption-label):.*$", re.M),
]


def markdown_prose(markdown: str) -> str:
    """The reader-facing text of a Markdown cell: prose, including the bodies of prose directives."""
    def keep(match: re.Match) -> str:
        return match.group(0) if match.group(2) in _PROSE_DIRECTIVES else "\n"

    text = _FENCE.sub(keep, markdown)
    for pattern in _NOT_PROSE:
        text = pattern.sub(" ", text)
    return text


_NAME_LIKE = re.compile(r"^[\w.:/-]*-[\w.:/-]*$|^[\w./-]+\.(py|md|ipynb|json|svg|png)$")  # glue keys, paths


def code_text(source: str) -> str:
    """Comments and string literals of a code cell (strings that look like names are left out)."""
    parts = []
    lines = [line for line in source.splitlines() if not line.lstrip().startswith(("%", "!"))]
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO("\n".join(lines) + "\n").readline))
    except (tokenize.TokenError, SyntaxError):
        return source
    for token in tokens:
        if token.type == tokenize.COMMENT:
            parts.append(token.string)
        elif token.type == tokenize.STRING or token.type == getattr(tokenize, "FSTRING_MIDDLE", -1):
            body = token.string.strip("rbfuRBFU").strip("'\"")
            if not _NAME_LIKE.match(body):
                parts.append(body)
    return "\n".join(parts)


def metadata_text(metadata) -> str:
    """Figure captions and alt texts (every string in the cell metadata but tags and names)."""
    if isinstance(metadata, dict):
        return "\n".join(metadata_text(v) for k, v in metadata.items() if k not in ("tags", "name", "jupytext"))
    if isinstance(metadata, list):
        return "\n".join(metadata_text(v) for v in metadata)
    return metadata if isinstance(metadata, str) else ""


def reader_texts(path: pathlib.Path) -> list[tuple[str, str]]:
    """(where, text) for each piece of reader-facing text of a page or a prompt file."""
    if path.parent.name == "outputs":
        return [("arquivo", markdown_prose(path.read_text(encoding="utf-8")))]
    texts = []
    for i, cell in enumerate(jupytext.read(path, fmt="md:myst").cells):
        if cell.cell_type == "markdown":
            source = cell.source
            if path == GLOSSARY and VARIANTS_LABEL in source:
                source = source[:source.index(VARIANTS_LABEL)]  # the list of rejected forms itself
            texts.append((f"célula {i} (texto)", markdown_prose(source)))
        elif cell.cell_type == "code":
            texts.append((f"célula {i} (código)", code_text(cell.source)))
            texts.append((f"célula {i} (legenda)", metadata_text(cell.metadata)))
    return texts


def term_problems(texts: list[tuple[str, str]], variants: dict[str, str]) -> list[str]:
    problems = []
    for where, text in texts:
        text = text.replace("*", "")  # emphasis: *treino* is still the word treino
        for variant, use in variants.items():
            for match in variant_pattern(variant).finditer(text):
                context = " ".join(text[max(0, match.start() - 30):match.end() + 30].split())
                problems.append(f"{where}: {match.group(0)!r} -> use {use!r}  (…{context}…)")
    return problems


VARIANTS = glossary_variants(GLOSSARY.read_text(encoding="utf-8"))


def test_glossary_lists_the_decided_variants():
    decided = {"treino": "treinamento", "multi-cabeça": "multicabeça", "preenchimento": "padding",
               "caso de borda": "caso-limite",
               # issue 42, point 4: the calques, the hyphenated forms and the colloquialisms
               "corrida": "execução", "escore": "pontuação", "transbordar": "estourar, estouro",
               "transborda": "estourar, estouro", "transbordam": "estourar, estouro",
               "multiplicações-e-somas": "multiplicações e somas", "erro-padrão": "erro padrão",
               "chute": "estimativa", "batem": "coincidem, conferem", "mexer": "alterar, mudar"}
    assert {k: v for k, v in VARIANTS.items() if k in decided} == decided
    assert "features" in VARIANTS and "quase *one-hot*" in VARIANTS


def test_variants_read_from_the_definition_list():
    section = ("(glossario-variantes)=\n## Formas\n\nTexto com **negrito** fora da lista.\n\ntreino\n"
               ": Use **treinamento**: um termo só.\n\ntransbordar, transborda\n: Use **estourar** ou **estouro**.\n\n"
               "## Depois\n\noutro\n: Use **não lido**.\n")
    assert glossary_variants(section) == {"treino": "treinamento", "transbordar": "estourar, estouro",
                                          "transborda": "estourar, estouro"}


@pytest.mark.parametrize("path", SOURCES, ids=IDS)
def test_no_rejected_variant_in_reader_facing_text(path):
    problems = term_problems(reader_texts(path), VARIANTS)
    assert not problems, "terms the glossary rejects:\n  " + "\n  ".join(problems)


_FIXTURE_PAGE = """---
jupytext:
  text_representation:
    format_name: myst
kernelspec:
  display_name: Python 3
  language: python
  name: python3
---

(tt-treino)=
# Título

O *treino* da atenção Multi-Cabeça usa `treino = 3` e $treino$ e {{ref}}`a seção <tt-treino>`.

```{{code-cell}} ipython3
---
mystnb:
  figure:
    caption: Curva de {caption}.
---
treino = 1  # {comment}
ax.set_title("{title}")
glue("l-treino-a", 1)
```
"""


@pytest.mark.parametrize("caption, comment, title, expected", [
    ("perda", "passo", "perda", ["'treino'", "'Multi-Cabeça'"]),       # prose only: code, math, labels skipped
    ("treinamento", "o treino começa", "perda", ["'treino'", "'Multi-Cabeça'", "'treino'"]),
    ("treinos", "passo", "quase one-hot", ["'treino'", "'Multi-Cabeça'", "'treinos'", "'quase one-hot'"]),
    ("casos de borda", "passo", "preenchimento", ["'treino'", "'Multi-Cabeça'", "'casos de borda'",
                                                  "'preenchimento'"]),
])
def test_term_check_can_fail(tmp_path, caption, comment, title, expected):
    page = tmp_path / "p.md"
    page.write_text(_FIXTURE_PAGE.format(caption=caption, comment=comment, title=title), encoding="utf-8")
    found = [p.split(": ", 1)[1].split(" ->")[0] for p in term_problems(reader_texts(page), VARIANTS)]
    assert sorted(found) == sorted(expected)


def test_variant_pattern_whole_words_only():
    pattern = variant_pattern("treino")
    assert pattern.search("o Treino") and pattern.search("dois treinos")
    assert not pattern.search("treinou") and not pattern.search("treinamento") and not pattern.search("ex-treino")
