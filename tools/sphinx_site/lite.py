"""What the site and the in-browser build (``tools/build_lite.py``) both need to know of JupyterLite.

The app lives under ``lite/`` of the site; the pages listed in :data:`HEAVY` are too heavy for the
browser and get a short variant there (run_button.py labels their button, build_lite.py edits them).
"""

LITE_DIR = "lite"  # under the site's root

# Pages whose cells are too heavy for the browser: (source pattern, replacement) edits that make the
# in-browser copy a short variant. A pattern that no longer matches fails the build.
# The import makes the kernel load tqdm (pyodide-kernel loads what a cell imports) for the progress line.
PROGRESS_IMPORT = "import tqdm  # a linha de progresso do treinamento"
HEAVY = {
    "book/aula510/ex3_copia_gru": [
        (r"^cfg = CopyConfig\(\)$",
         "cfg = CopyConfig(steps=20, batch_size=32, eval_per_length=10, eval_every=10, "
         "eval_mid_per_length=10)  "
         "# versão curta para o navegador (o site usa CopyConfig())"),
        # no processes in the browser; a text line (tqdm, loaded by the import) shows each model's progress
        (r"^resultados = run_both\(cfg\)$",
         f"{PROGRESS_IMPORT}\nresultados = run_both(cfg, parallel=False, progress=True)"),
    ],
    "book/alem/transformer_treinado": [  # the page's own switch: a quarter of the steps, one seed
        (r"^RAPIDO = False  .*$",
         "RAPIDO = True  # versão curta para o navegador (o site usa RAPIDO = False)"),
        (r"^resultados, parede = run_many\(\[cfgs\[k\] for k in ordem\]\)$",
         f"{PROGRESS_IMPORT}\n"
         "resultados, parede = run_many([cfgs[k] for k in ordem], parallel=False, progress=True)"),
    ],
    "book/alem/transformer_copia": [  # comments in Portuguese: the reader sees them in the notebook
        (r"^SEMENTES = \(0, 1, 2\)$", "SEMENTES = (0,)  # versão curta (no site: (0, 1, 2))"),
        (r"^base = TransformerCopyConfig\(\)$",
         "base = TransformerCopyConfig(steps=30, eval_every=15, data=replace(TransformerCopyConfig().data, "
         "batch_size=32, eval_per_length=20, eval_mid_per_length=10))  "
         "# versão curta (no site: TransformerCopyConfig())"),
        (r"^L_CURTO, PASSOS_CURTO, PASSOS_GRU_CURTO = 20, 250, 600$",
         "L_CURTO, PASSOS_CURTO, PASSOS_GRU_CURTO = 20, 20, 30  # versão curta (no site: 20, 250, 600)"),
        (r"^N_CRONO, L_CRONO = 100, 80$", "N_CRONO, L_CRONO = 10, 40  # versão curta (no site: 100, 80)"),
        # one job after the other, each with its progress line (tqdm, loaded by the import)
        (r"^resultados, parede = run_many\(trabalhos.values\(\)\)$",
         f"{PROGRESS_IMPORT}\n"
         "resultados, parede = run_many(trabalhos.values(), parallel=False, progress=True)"),
        (r"^N_MAPA, L_MAPA, N_ABL = 200, 40, 100$",
         "N_MAPA, L_MAPA, N_ABL = 20, 40, 10  # versão curta (no site: 200, 40, 100)"),
    ],
}
