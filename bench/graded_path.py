"""The graded path: every `attn` function the Activity 4 pages run, and what one call costs.

Executes the code cells of every page under book/atividade4/ with a profiler that records each call
into `attn` (plotting, diagrams and prose helpers excluded: they draw the pages, they are not the
exercises' code). Prints the functions reached with their code lines (docstrings, comments and blank
lines excluded); the graded path is the functions the pages include (`literalinclude`) and every
`attn` function they call. Then the Python calls into `attn` made by one `MultiHeadAttention.forward`
and by one `transformer_encoder_block` on the Exercise 3 setup.

    .venv/bin/python bench/graded_path.py
"""
import ast
import inspect
import os
import re
import sys
import textwrap
from collections import Counter
from pathlib import Path

import jupytext
import matplotlib
import numpy as np

matplotlib.use("Agg")  # a script, not a notebook: no display
ROOT = Path(__file__).resolve().parent.parent
ATTN = str(ROOT / "attn") + os.sep
DRAWING = tuple(str(ROOT / "attn" / f) for f in ("plotting.py", "diagrams.py", "prose.py"))


def graded(code) -> bool:
    return code.co_filename.startswith(ATTN) and not code.co_filename.startswith(DRAWING)


def drawn(frame) -> bool:
    """Whether the call comes, through attn, from a drawing helper (a figure's own checks)."""
    while frame is not None and frame.f_code.co_filename.startswith(ATTN):
        if frame.f_code.co_filename.startswith(DRAWING):
            return True
        frame = frame.f_back
    return False


def record(calls: Counter, edges: set | None = None):
    def profile(frame, event, _arg):
        if event == "call" and graded(frame.f_code) and not drawn(frame):
            calls[frame.f_code] += 1
            if edges is not None and frame.f_back is not None:
                edges.add((frame.f_back.f_code, frame.f_code))
    return profile


def included() -> set:
    """(file, qualified name) of every attn function the Activity 4 pages show with a literalinclude."""
    found = set()
    for page in (ROOT / "book" / "atividade4").glob("*.md"):
        text = page.read_text(encoding="utf-8")
        include = r"```\{literalinclude\} \.\./\.\./(attn/\S+)\n(?::[^\n]*\n)*?:pyobject: (\S+)"
        found |= {(str(ROOT / path), name) for path, name in re.findall(include, text)}
    return found


# what the statement of Activity 4 asks to write (seed 004): the functions and the class's two methods
STATEMENT = {("core.py", "softmax"), ("core.py", "scaled_dot_product_attention"), ("core.py", "causal_mask"),
             ("multihead.py", "MultiHeadAttention.__init__"), ("multihead.py", "MultiHeadAttention.forward"),
             ("encoder.py", "layer_norm"), ("encoder.py", "ffn"), ("encoder.py", "transformer_encoder_block"),
             ("positional.py", "positional_encoding")}


def closure(start: set, edges: set) -> set:
    """``start`` and every attn function it calls, directly or not."""
    reached = set(start)
    while more := {callee for caller, callee in edges if caller in reached} - reached:
        reached |= more
    return reached


def code_lines(code) -> int:
    """Physical lines of a function's statements, without its docstring, comments or blank lines."""
    lines, first = inspect.getsourcelines(code)
    tree = ast.parse(textwrap.dedent("".join(lines)))
    func = tree.body[0]
    body = func.body[1:] if ast.get_docstring(func) is not None else func.body
    covered = {func.lineno}  # the def line
    for node in body:
        for sub in ast.walk(node):
            if hasattr(sub, "lineno"):
                covered.update(range(sub.lineno, sub.end_lineno + 1))
    source = textwrap.dedent("".join(lines)).splitlines()
    return sum(1 for n in covered if source[n - 1].strip() and not source[n - 1].strip().startswith("#"))


def run_pages(calls: Counter, edges: set):
    import myst_nb

    myst_nb.glue = lambda *args, **kwargs: None  # the pages glue numbers for the site; not needed here
    for page in sorted((ROOT / "book" / "atividade4").glob("*.md")):
        notebook = jupytext.read(page, fmt="md:myst")
        namespace = {"__name__": "__page__"}
        os.chdir(page.parent)
        sys.setprofile(record(calls, edges))
        try:
            for cell in notebook.cells:
                if cell.cell_type == "code" and not cell.source.lstrip().startswith("%"):
                    exec(compile(cell.source, str(page), "exec"), namespace)  # noqa: S102 -- the page's own code
        finally:
            sys.setprofile(None)


def calls_of(function) -> int:
    calls = Counter()
    sys.setprofile(record(calls))
    try:
        function()
    finally:
        sys.setprofile(None)
    return sum(calls.values())


if __name__ == "__main__":
    import attn
    from attn.encoder import encoder_example

    if not attn.__file__.startswith(ATTN):  # another checkout's attn would measure nothing here
        sys.exit(f"attn is imported from {attn.__file__}, not {ATTN}: pip install -e . here")

    calls, edges = Counter(), set()
    run_pages(calls, edges)
    shown = included()
    reached = closure({c for c in calls if (c.co_filename, c.co_qualname) in shown}, edges)
    asked = closure({c for c in calls if (c.co_filename[len(ATTN):], c.co_qualname) in STATEMENT}, edges)

    def table(codes):
        rows = sorted((c.co_filename[len(ATTN):], c.co_firstlineno, c.co_qualname, code_lines(c))
                      for c in codes if not c.co_name.startswith("<"))  # not the comprehensions
        return rows, sum(r[3] for r in rows)

    rows, _ = table(calls)
    for path, line, name, n in rows:
        mark = "*" if any(c.co_qualname == name and c.co_firstlineno == line for c in reached) else " "
        print(f"{n:4d} {mark} {path}:{line}  {name}")
    for label, codes in (("the functions the statement asks for and all they call", asked),
                         ("graded path (*): the functions the pages include and all they call", reached),
                         ("everything the Activity 4 pages run in attn", calls)):
        n_rows, n_lines = table(codes)
        print(f"{label}: {len(n_rows)} functions, {n_lines} code lines")

    mha, X, ffn_params = encoder_example()
    mask = attn.causal_mask(len(X))  # (n, n)
    forward = calls_of(lambda: mha.forward(X, X, X, mask))
    block = calls_of(lambda: attn.transformer_encoder_block(X, mha, *ffn_params, mask))
    print(f"Python calls into attn (with a causal mask): {forward} per MultiHeadAttention.forward, "
          f"{block} per transformer_encoder_block")
    print(f"NumPy {np.__version__}")
