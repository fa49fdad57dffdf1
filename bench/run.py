"""Entry point of `make bench`: runs every benchmark under bench/.

First the graded path of Activity 4 (bench/graded_path.py: code lines, calls per forward), the
per-page execution budget of the last build (bench/pages.py, read from _build), then the
training-step benchmarks (the copy task, the Transformer encoder, the encoder-decoder), tiled
attention, and the in-browser timings of every page (bench/lite.py, headless Chromium over the site).
"""
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPTS = ("graded_path.py", "pages.py", "copy_task.py", "transformer.py", "decoder.py", "tiled.py",
           "lite.py")

if __name__ == "__main__":
    # bench/lite.py drives the browser with the tests' helpers; the scripts import the build helpers
    paths = [os.path.join(HERE, "..", folder) for folder in ("tests", "tools")]
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", PYTHONPATH=os.pathsep.join(paths))
    codes = []
    for name in SCRIPTS:
        print(f"\n== bench/{name}", flush=True)
        codes.append(subprocess.call([sys.executable, os.path.join(HERE, name), *sys.argv[1:]], env=env))
    sys.exit(max(codes))
