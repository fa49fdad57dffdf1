"""Where the build's own files are: the repository root and ``tools/``."""

from pathlib import Path

TOOLS = Path(__file__).resolve().parent.parent
ROOT = TOOLS.parent
