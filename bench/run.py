"""Entry point of `make bench`: runs every benchmark under bench/ (currently the copy task)."""
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

if __name__ == "__main__":
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    sys.exit(subprocess.call([sys.executable, os.path.join(HERE, "copy_task.py"), *sys.argv[1:]], env=env))
