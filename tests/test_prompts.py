"""The lessons' deliverable prompt files (outputs/*.md), checked like code.

Each file has the front matter the lesson shows (name, description, phase, lesson); its page shows
the file itself through ``literalinclude`` and links the raw file; the built site serves the file
byte for byte at ``outputs/`` under the site root; and every numbered point of the prompt has a
labelled demonstration, with code, on its page.
"""
from __future__ import annotations

import html
import pathlib
import re
from html.parser import HTMLParser

import numpy as np
import pytest
import yaml

import attn

ROOT = pathlib.Path(__file__).resolve().parent.parent
HTML = ROOT / "_build" / "html"

# file -> (expected front matter, its page, the label prefix of the page's demonstrations)
PROMPTS = {
    "prompt-attention-shapes.md": (
        {"name": "attention-shapes", "phase": 5, "lesson": 10},
        "book/aula510/prompt_attention_shapes.md", "shapes-ponto"),
    "prompt-attention-explainer.md": (
        {"name": "attention-explainer", "phase": 7, "lesson": 2},
        "book/aula702/prompt_attention_explainer.md", "explainer-ponto"),
}


def _split(path: pathlib.Path) -> tuple[dict, str]:
    text = path.read_text(encoding="utf-8")
    match = re.fullmatch(r"---\n(.*?)\n---\n(.*)", text, re.S)
    assert match, f"{path.name} must start with a YAML front matter block between --- lines"
    return yaml.safe_load(match.group(1)), match.group(2)


def _points(body: str) -> list[int]:
    return [int(n) for n in re.findall(r"^(\d+)\. ", body, re.M)]


class _Links(HTMLParser):
    def __init__(self):
        super().__init__()
        self.hrefs, self.ids = [], set()

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "a" and attrs.get("href"):
            self.hrefs.append(attrs["href"])
        if attrs.get("id"):
            self.ids.add(attrs["id"])


def _built(page: str) -> tuple[str, _Links, pathlib.Path]:
    path = HTML / pathlib.Path(page).with_suffix(".html")
    if not path.is_file():
        pytest.fail(f"{path} missing: run `make book` first")
    text = path.read_text(encoding="utf-8")
    links = _Links()
    links.feed(text)
    return text, links, path


@pytest.mark.parametrize("name", PROMPTS)
def test_front_matter_fields_and_types(name):
    meta, body = _split(ROOT / "outputs" / name)
    expected, _, _ = PROMPTS[name]
    assert set(meta) == {"name", "description", "phase", "lesson"}
    assert isinstance(meta["name"], str) and isinstance(meta["description"], str) and meta["description"].strip()
    assert type(meta["phase"]) is int and type(meta["lesson"]) is int
    assert {k: meta[k] for k in expected} == expected
    assert name == f"prompt-{meta['name']}.md"


@pytest.mark.parametrize("name", PROMPTS)
def test_body_is_portuguese_with_numbered_points(name):
    _, body = _split(ROOT / "outputs" / name)
    points = _points(body)
    assert points == list(range(1, len(points) + 1)) and len(points) >= 4
    words = re.findall(r"\w+", body.lower())
    assert {"de", "que", "uma", "não"} <= set(words), "the body is written in Portuguese"


@pytest.mark.parametrize("name", PROMPTS)
def test_page_includes_the_file_instead_of_pasting_it(name):
    _, page, _ = PROMPTS[name]
    source = (ROOT / page).read_text(encoding="utf-8")
    assert re.search(rf"```{{literalinclude}} \.\./\.\./outputs/{re.escape(name)}\n", source)
    _, body = _split(ROOT / "outputs" / name)
    pasted = [line for line in body.splitlines() if len(line.strip()) > 40 and line.strip() in source]
    assert not pasted, f"{page} pastes lines of the prompt instead of including it: {pasted[:2]}"


@pytest.mark.parametrize("name", PROMPTS)
def test_built_page_shows_the_file_and_links_the_raw_copy(name):
    _, page, _ = PROMPTS[name]
    text, links, path = _built(page)
    visible = html.unescape(re.sub(r"<[^>]+>", "", text))
    raw = (ROOT / "outputs" / name).read_text(encoding="utf-8")
    missing = [line for line in raw.splitlines() if line.strip() and line not in visible]
    assert not missing, f"lines of {name} not shown on {path.name}: {missing[:3]}"
    raw_links = [h for h in links.hrefs if h.endswith(f"outputs/{name}")]
    assert raw_links, f"{path.name} does not link outputs/{name}"
    for href in raw_links:
        assert (path.parent / href).resolve() == (HTML / "outputs" / name).resolve()


@pytest.mark.parametrize("name", PROMPTS)
def test_site_serves_the_file_byte_identical(name):
    served = HTML / "outputs" / name
    assert served.is_file(), f"{served} missing: run `make book` first"
    assert served.read_bytes() == (ROOT / "outputs" / name).read_bytes()


def test_intro_lists_both_files_with_links():
    _, links, path = _built("book/intro.md")
    for name in PROMPTS:
        hrefs = [h for h in links.hrefs if h.endswith(f"outputs/{name}")]
        assert hrefs and all((path.parent / h).resolve() == (HTML / "outputs" / name).resolve() for h in hrefs)


@pytest.mark.parametrize("name", PROMPTS)
def test_every_numbered_point_has_a_demonstration_on_its_page(name):
    _, body = _split(ROOT / "outputs" / name)
    _, page, prefix = PROMPTS[name]
    source = (ROOT / page).read_text(encoding="utf-8")
    _, links, _ = _built(page)
    labels = re.findall(rf"^\(({prefix}-\d+)\)=$", source, re.M)
    assert sorted(labels) == sorted(f"{prefix}-{n}" for n in _points(body)), "one label per point"
    for n in _points(body):
        label = f"{prefix}-{n}"
        start = source.index(f"({label})=\n") + len(label) + 4
        start = source.index("\n", start) + 1                   # past the heading the label names
        following = re.search(r"^\([\w-]+\)=$|^#{1,3} ", source[start:], re.M)
        section = source[start:start + following.start()] if following else source[start:]
        assert "```{code-cell}" in section, f"point {n}: no code cell demonstrates it"
        assert f"<{label}>`" in source, f"point {n}: the page's table does not link its demonstration"
        assert label in links.ids, f"point {n}: no element with id {label!r} in the built page"


def test_explainer_example_numbers_match_attn():
    """The worked example written in the explainer prompt is what attn computes (to the printed digits)."""
    _, body = _split(ROOT / "outputs" / "prompt-attention-explainer.md")
    rows = [re.findall(r"\d+(?:,\d+)?", line) for line in body.splitlines()
            if re.match(r"\s*\| (física|culinária|história) ", line)]
    table = np.array([[float(x.replace(",", ".")) for x in row] for row in rows])   # (3, 5): k1 k2 v e w
    query = [float(x.replace(",", ".")) for x in re.search(r"q = \(([\d,]+); ([\d,]+)\)", body).groups()]
    out, weights = attn.scaled_dot_product_attention(np.array([query]), table[:, :2], table[:, 2:3])
    scores = np.array(query) @ table[:, :2].T / np.sqrt(2)
    assert table.shape == (3, 5)
    assert np.array_equal(np.round(scores, 3), table[:, 3]) and np.array_equal(np.round(weights[0], 3), table[:, 4])
    written = float(re.search(r"= ([\d,]+) livros", body).group(1).replace(",", "."))
    assert round(float(out[0, 0]), 1) == written
