"""Test-suite plugins: the incremental re-run of `make test` (tests/_memo.py)."""

pytest_plugins = ["_memo"]
