"""Per-page execution budget of the book build, read from the build's jupyter-cache.

For every notebook page of the TOC: how long its execution took when `make book` last executed it
(the ``execution_seconds`` that jupyter-cache records for the cached notebook matching the page's
current code cells), its share of the whole, and when that execution happened. A page whose code
changed since the last build has no matching record and is listed as such. Then the copy task's
split between training and evaluating: the training times the page glues (from the same cached
run) against the evaluation of the page's configuration (every attention mode, the page's
sequences per length), timed here on untrained weights (greedy decoding does the same operations
whatever the weights).

    python bench/pages.py [BUILD_DIR]     # default _build; `make bench` runs it first
"""
from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before NumPy is imported (as the page's workers)
import ast  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

from export_executed import toc_pages  # noqa: E402  (tools/ on PYTHONPATH: bench/run.py)

ROOT = Path(__file__).resolve().parent.parent

COPY_PAGE = "book/aula510/ex3_copia_gru"
COPY_GLUE = {"cp-train-s-com": "training, attention model", "cp-train-s-sem": "training, plain model",
             "cp-wall-s": "the training cell (both models in parallel, with their evaluations)"}


def cached_runs(build: Path) -> dict[str, tuple[float, object, object]]:
    """page -> (execution seconds, record creation time, executed notebook) for the pages in the cache."""
    from jupyter_cache import get_cache
    from myst_nb.core.read import read_myst_markdown_notebook

    cache = get_cache(str(build / ".jupyter_cache"))
    runs = {}
    for page in toc_pages():
        rel = page.relative_to(ROOT).with_suffix("").as_posix()
        nb = read_myst_markdown_notebook(page.read_text(encoding="utf-8"), path=str(page))
        try:
            pk, merged = cache.merge_match_into_notebook(nb)
        except KeyError:
            continue
        record = cache.get_cache_record(pk)
        runs[rel] = (float(record.data.get("execution_seconds", float("nan"))), record.created, merged)
    return runs


def glued(notebook, name: str) -> float | None:
    """A number glued by a page (attn.prose formats it with a decimal comma), as a float."""
    for cell in notebook.cells:
        for out in cell.get("outputs", []):
            scrap = out.get("metadata", {}).get("scrapbook", {})
            if scrap.get("name") == name:
                text = ast.literal_eval(out["data"][scrap.get("mime_prefix", "") + "text/plain"])
                return float(str(text).replace(".", "").replace(",", ".").replace("\u202f", ""))
    return None


def evaluation_seconds() -> dict[str, float]:
    """CPU seconds of the copy task's final evaluation of each model at the page's configuration."""
    from attn.training.copytask import CopyConfig, evaluate
    from attn.training.seq2seq import ATTENTION_MODES, Seq2Seq

    cfg = CopyConfig()
    out = {}
    for attention in (True, False):
        model = Seq2Seq(cfg.vocab_size, cfg.emb_size, cfg.hidden_size, attention, cfg.d_attn, seed=cfg.seed)
        start = time.process_time()
        for mode in ATTENTION_MODES if attention else ("learned",):
            evaluate(model, cfg.eval_lengths, cfg.eval_per_length, cfg.n_symbols, seed=12345, mode=mode)
        out["attention" if attention else "plain"] = time.process_time() - start
    return out


def main(argv: list[str]) -> int:
    build = Path(argv[0]).resolve() if argv and not argv[0].startswith("-") else ROOT / "_build"
    if not (build / ".jupyter_cache").is_dir():
        print(f"no execution cache in {build}: run `make book` first", file=sys.stderr)
        return 1
    runs = cached_runs(build)
    pages = [p.relative_to(ROOT).with_suffix("").as_posix() for p in toc_pages()]
    total = sum(runs[p][0] for p in pages if p in runs)
    print(f"Build execution time per page (jupyter-cache records in {build.relative_to(ROOT)}; "
          "wall seconds of each page's own kernel, as measured when it ran)")
    print(f"{'page':<48} {'seconds':>8} {'share':>7}  executed at (UTC)")
    for page in sorted(pages, key=lambda p: -runs[p][0] if p in runs else 0):
        if page in runs:
            seconds, created, _ = runs[page]
            print(f"{page:<48} {seconds:>8.1f} {100 * seconds / total:>6.1f}%  {created:%Y-%m-%d %H:%M}")
        else:
            print(f"{page:<48} {'-':>8} {'':>7}  not in the cache (code changed since the last build)")
    print(f"{'total (summed; the build runs two pages at a time)':<48} {total:>8.1f}")

    if COPY_PAGE in runs:
        print(f"\nCopy task ({COPY_PAGE}): training vs evaluating", flush=True)
        notebook = runs[COPY_PAGE][2]
        train = {}
        for name, what in COPY_GLUE.items():
            value = glued(notebook, name)
            print(f"  {what:<70} {value if value is not None else float('nan'):>7.1f} s (glued by the build)")
            train[name] = value
        evals = evaluation_seconds()
        for model, glue_name in (("attention", "cp-train-s-com"), ("plain", "cp-train-s-sem")):
            seconds = train[glue_name] or float("nan")
            share = 100 * evals[model] / (seconds + evals[model])
            print(f"  evaluation, {model + ' model':<59} {evals[model]:>7.1f} s (CPU, timed here): "
                  f"{share:.1f}% of that model's training + evaluation")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
