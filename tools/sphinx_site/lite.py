"""What the site and the in-browser build (``tools/build_lite.py``) both need to know of JupyterLite.

The app lives under ``lite/`` of the site; the pages listed in :data:`HEAVY` are too heavy for the
browser and get a short variant there (run_button.py labels their button, build_lite.py edits them).
"""

LITE_DIR = "lite"  # under the site's root

# Pages whose cells are too heavy for the browser: (source pattern, replacement) edits that make the
# in-browser copy a short variant. A pattern that no longer matches fails the build.
HEAVY = {
    "book/aula510/ex3_copia_gru": [
        (r"^cfg = CopyConfig\(\)$",
         "cfg = CopyConfig(steps=100, eval_per_length=50, eval_every=25)  # short variant for the browser "
         "(the site's run: CopyConfig())"),
        (r"run_both\(cfg\)", "run_both(cfg, parallel=False)"),  # no processes in the browser
    ],
}
