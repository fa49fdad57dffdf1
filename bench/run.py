"""Entry point of `make bench`: runs every benchmark under bench/ (copy task, Transformer, tiled)."""
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

if __name__ == "__main__":
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    codes = [subprocess.call([sys.executable, os.path.join(HERE, name), *sys.argv[1:]], env=env)
             for name in ("copy_task.py", "transformer.py", "tiled.py")]
    sys.exit(max(codes))
