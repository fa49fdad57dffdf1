"""Run again, in an incremental ``make test``, only the tests whose inputs changed.

A test's outcome depends on the code, on the files it reads and on what it runs. While a test runs
(its fixtures' set-up included), a Python audit hook records every file of the repository that it
opens for reading (including the files the tests' own local servers send to the browser, since
those servers run in the test process), every folder it lists, and every process it starts. When
the test passes (set-up, call and tear-down), its record is kept in ``_build/.stage-keys/tests/``:
the digest of the code (every ``*.py`` of the repository, the pins, the browser-side tools'
lock, the browser's version, the variables the tests read: ``SITE_*``, ``PAGES_*``, ``LITE_*``) and the digest of each recorded
file's bytes and each recorded folder's names.

A later run leaves out a test whose record still holds: the same code digest, every recorded file
byte for byte the same, every recorded folder holding the same names. A test is never kept when:

* it started a process, since what another process reads is not seen; but for the browser
  (Playwright's driver ``node``: the tests give it only URLs of their own local server, which records
  what it sends), for a version probe (``PROGRAM --version``), and for a test marked
  ``spawned_reads_seen``: its processes read nothing of the repository but the code (in the code
  digest), what the test itself opened and handed them, and what its own local server sent them;
* it did not pass, or was skipped;
* ``MEMO=0`` or ``CI`` is set: then nothing is left out (records are still written).

Reads inside ``with not_inputs():`` are nobody's input. It is for what only decides which tests are
collected (the notebook pages, read for their front matter, that parametrize a module's tests): a
change there changes the collected test ids, and a new id has no record.

A fresh clone has no records, so CI runs everything. What the hook cannot see: a file whose mere
existence (``Path.exists``) decides an outcome without being opened, and reads by compiled code that
bypasses Python's ``open``. Both are covered in practice by the code digest and by the files such a
test also opens; ``make test FULL=1`` runs everything.
"""

from __future__ import annotations

import ast
import contextlib
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(os.environ.get("MEMO_ROOT") or Path(__file__).resolve().parent.parent)  # (another: its own test)
RECORDS = ROOT / "_build" / ".stage-keys" / "tests"
_ROOT = str(ROOT) + os.sep
# Not inputs of a test's outcome, or already in the code digest: the environment, the repository's
# history, the records themselves, and results that check their own inputs before being reused
# (tests/test_site.py, "visits kept between runs").
_IGNORED = tuple(_ROOT + p for p in (".venv" + os.sep, ".git" + os.sep, "node_modules" + os.sep,
                                     ".hypothesis" + os.sep, os.path.join("_build", ".stage-keys") + os.sep,
                                     os.path.join("_build", ".browser-visits") + os.sep))
_CODE_SUFFIXES = (".py", ".pyc")
_SPAWN_EVENTS = frozenset({"subprocess.Popen", "os.system", "os.posix_spawn", "os.exec", "os.spawn",
                           "os.fork", "os.forkpty"})
_EVENTS = frozenset({"open", "os.listdir", "os.scandir", "sqlite3.connect"}) | _SPAWN_EVENTS
_ENV_PREFIXES = ("SITE_", "PAGES_", "LITE_")  # the variables the tests read (SITE_HTML_DIR, …)


class _Frame:
    """What one test, one fixture set-up or the collection read, listed and started."""

    def __init__(self):
        self.files: set[str] = set()
        self.folders: set[str] = set()
        self.spawned: set[str] = set()


_stack: list[_Frame] = []  # the frame that gets what the hook sees: a test, a fixture, the collection
_collection = _Frame()  # the collection, outside any test module's import
_modules: dict[str, tuple[_Frame, set[str]]] = {}  # test module: its import's frame, the modules it loaded
_fixtures: dict[tuple, _Frame] = {}


@contextlib.contextmanager
def not_inputs():
    """Reads made inside are recorded nowhere (see the module's docstring: collection-only reads)."""
    _stack.append(_Frame())
    try:
        yield
    finally:
        _stack.pop()


def _under_root(path) -> str | None:
    if isinstance(path, int) or path is None:
        return None
    path = os.fsdecode(os.fspath(path))
    path = os.path.abspath(path)
    if not path.startswith(_ROOT) or path.startswith(_IGNORED) or path.endswith(_CODE_SUFFIXES):
        return None
    return path[len(_ROOT):]


def _reads_nothing_of_ours(args) -> bool:
    """Playwright's driver (``node``), given only URLs of the tests' own server, or a version probe
    (``PROGRAM --version``, as jupytext runs for pandoc on import)."""
    argv = args[1] if isinstance(args[1], (list, tuple)) else [args[1]]
    program = os.fsdecode(os.fspath(args[0] if args[0] is not None else argv[0]))
    return (os.path.basename(program) == "node" and "playwright" in program) or list(argv[1:]) == ["--version"]


def _audit(event: str, args) -> None:
    if event not in _EVENTS or not _stack:
        return
    frame = _stack[-1]
    if event == "open":
        path, mode, flags = args
        writes = (flags & (os.O_WRONLY | os.O_RDWR)) if mode is None else any(c in mode for c in "wax+")
        if not writes and (rel := _under_root(path)) is not None:
            frame.files.add(rel)
    elif event in ("os.listdir", "os.scandir"):
        if (rel := _under_root(args[0] if args[0] is not None else ".")) is not None:
            frame.folders.add(rel)
    elif event == "sqlite3.connect":
        if (rel := _under_root(args[0])) is not None:
            frame.files.add(rel)
    elif not (event == "subprocess.Popen" and _reads_nothing_of_ours(args)):
        frame.spawned.add(event)


# --------------------------------------------------------------------------- digests


_file_digests: dict[str, str] = {}


def _file_digest(rel: str) -> str:
    if rel not in _file_digests:
        path = ROOT / rel
        if path.is_dir():
            _file_digests[rel] = "folder"
        elif path.is_file():
            digest = hashlib.sha256()
            with path.open("rb") as f:  # (recorded only while a test runs, and this is not during one)
                for block in iter(lambda: f.read(1 << 20), b""):
                    digest.update(block)
            _file_digests[rel] = digest.hexdigest()
        else:
            _file_digests[rel] = "missing"
    return _file_digests[rel]


def _folder_digest(rel: str) -> str:
    path = ROOT / rel
    names = sorted(n for n in os.listdir(path) if n != "__pycache__") if path.is_dir() else ["<missing>"]
    return hashlib.sha256("\0".join(names).encode()).hexdigest()


def _inputs_digest(files, folders) -> str:
    digest = hashlib.sha256()
    for rel in sorted(files):
        digest.update(f"{rel}\0{_file_digest(rel)}\0".encode())
    for rel in sorted(folders):
        digest.update(f"{rel}/\0{_folder_digest(rel)}\0".encode())
    return digest.hexdigest()


def _code_digest() -> str:
    digest = hashlib.sha256(sys.version.encode())
    code = [p for top in ("attn", "tests", "tools", "bench") for p in (ROOT / top).rglob("*.py")]
    pins = [ROOT / n for n in ("pyproject.toml", "constraints.txt", "package-lock.json", "Makefile")]
    for path in sorted([*code, *pins, *ROOT.glob("requirements*.txt")]):
        if "__pycache__" not in path.parts and path.is_file():
            digest.update(path.relative_to(ROOT).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    for name in sorted(os.environ):
        if name.startswith(_ENV_PREFIXES):
            digest.update(f"{name}={os.environ[name]}\0".encode())
    try:
        browser = subprocess.run(["chromium", "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        browser = "no browser"
    digest.update(browser.encode())
    return digest.hexdigest()


def _is_ours(path) -> bool:
    return bool(path) and path.startswith(_ROOT) and not path.startswith(_IGNORED)


def _imports(path: Path) -> set[str]:
    """The modules a file of the repository imports, directly or through other files of it."""
    seen, todo = set(), [path]
    while todo:
        tree = ast.parse(todo.pop().read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                     [node.module] if isinstance(node, ast.ImportFrom) and node.module and not node.level else [])
            for name in names:
                for prefix in (name.split(".")[: i + 1] for i in range(name.count(".") + 1)):
                    name = ".".join(prefix)
                    if name in seen:
                        continue
                    seen.add(name)
                    for top in ("", "tests/", "tools/"):
                        base = ROOT / (top + name.replace(".", "/"))
                        for source in (base.with_suffix(".py"), base / "__init__.py"):
                            if source.is_file():
                                todo.append(source)
    return seen


def _record_path(nodeid: str) -> Path:
    return RECORDS / (hashlib.sha256(nodeid.encode()).hexdigest()[:32] + ".json")


# --------------------------------------------------------------------------- the plugin


class Memo:
    def __init__(self, config):
        self.config = config
        self.code = _code_digest()
        self.reuse = os.environ.get("MEMO", "1") != "0" and not os.environ.get("CI")
        self.worker = getattr(config, "workerinput", {}).get("workerid")  # None: not an xdist worker
        self.outcomes: dict[str, list] = {}
        self.left_out = 0
        self._imported: dict[str, set[str]] = {}
        sys.addaudithook(_audit)

    # -- collection: what a test module's import reads counts for its tests, and for the tests of every
    # module that imports (directly or not) a module that this import loaded first
    @pytest.hookimpl(hookwrapper=True)
    def pytest_collection(self, session):
        _stack.append(_collection)
        try:
            yield
        finally:
            _stack.pop()

    @pytest.hookimpl(hookwrapper=True)
    def pytest_make_collect_report(self, collector):
        if not isinstance(collector, pytest.Module):
            yield
            return
        frame, before = _Frame(), set(sys.modules)
        _stack.append(frame)
        try:
            yield
        finally:
            _stack.pop()
            _modules[str(collector.path)] = frame, {name for name in set(sys.modules) - before
                                                    if _is_ours(getattr(sys.modules[name], "__file__", None))}

    def _collection_frames(self, item) -> list[_Frame]:
        path = str(item.path)
        if path not in self._imported:
            self._imported[path] = _imports(Path(path))
        imported = self._imported[path]
        return [_collection] + [frame for module, (frame, loaded) in _modules.items()
                                if module == path or loaded & imported]

    @pytest.hookimpl(trylast=True)  # after `-m` has deselected the other stage's tests
    def pytest_collection_modifyitems(self, session, config, items):
        if not self.reuse:
            return
        kept, left_out = [], []
        for item in items:
            (left_out if self._holds(item.nodeid) else kept).append(item)
        if left_out:
            config.hook.pytest_deselected(items=left_out)
            items[:] = kept
        self.left_out = len(left_out)

    def _holds(self, nodeid: str) -> bool:
        with not_inputs():  # this plugin's own reads
            return self._record_holds(nodeid)

    def _record_holds(self, nodeid: str) -> bool:
        path = _record_path(nodeid)
        if not path.is_file():
            return False
        record = json.loads(path.read_text(encoding="utf-8"))
        return (record["nodeid"] == nodeid and record["code"] == self.code
                and record["inputs"] == _inputs_digest(record["files"], record["folders"]))

    # -- running: a frame per test, one per fixture set-up
    @pytest.hookimpl(hookwrapper=True)
    def pytest_fixture_setup(self, fixturedef, request):
        frame = _fixtures.setdefault(self._fixture_id(fixturedef), _Frame())
        _stack.append(frame)
        try:
            yield
        finally:
            _stack.pop()

    @staticmethod
    def _fixture_id(fixturedef) -> tuple:
        return fixturedef.argname, fixturedef.baseid, id(fixturedef)

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item, nextitem):
        frame = _Frame()
        _stack.append(frame)
        self.outcomes[item.nodeid] = []
        try:
            yield
        finally:
            _stack.pop()
        self._keep(item, frame)

    def pytest_runtest_logreport(self, report):
        if report.nodeid in self.outcomes:
            self.outcomes[report.nodeid].append(report.outcome)

    def _keep(self, item, frame: _Frame) -> None:
        path = _record_path(item.nodeid)
        frames = [frame, *self._collection_frames(item)]
        for defs in item._fixtureinfo.name2fixturedefs.values():
            frames += [_fixtures[key] for key in map(self._fixture_id, defs) if key in _fixtures]
        outcomes = self.outcomes.pop(item.nodeid)
        spawned = set().union(*(f.spawned for f in frames))
        if item.get_closest_marker("spawned_reads_seen"):
            spawned = set()
        if spawned or len(outcomes) != 3 or any(o != "passed" for o in outcomes):
            path.unlink(missing_ok=True)
            return
        files = sorted(set().union(*(f.files for f in frames)))
        folders = sorted(set().union(*(f.folders for f in frames)))
        for rel in files:  # read again now: a test may have rewritten a file it read
            _file_digests.pop(rel, None)
        record = {"nodeid": item.nodeid, "code": self.code, "files": files, "folders": folders,
                  "inputs": _inputs_digest(files, folders)}
        RECORDS.mkdir(parents=True, exist_ok=True)
        # written whole, then renamed: the stage running beside this one reads records meanwhile
        partial = path.with_name(f"{path.name}.{os.getpid()}.partial")
        partial.write_text(json.dumps(record), encoding="utf-8")
        os.replace(partial, path)

    # -- reporting: an xdist worker hands its count to the controller (every worker leaves out the same)
    def pytest_sessionfinish(self, session, exitstatus):
        if hasattr(self.config, "workeroutput"):
            self.config.workeroutput["memo_left_out"] = self.left_out
        elif exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED and self.left_out:
            session.exitstatus = pytest.ExitCode.OK  # every test left out: nothing to run is a pass

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node, error):
        self.left_out = max(self.left_out, getattr(node, "workeroutput", {}).get("memo_left_out", 0))

    def pytest_terminal_summary(self, terminalreporter):
        if self.worker is not None:
            return
        if not self.reuse:
            terminalreporter.write_line("memo: every test ran (MEMO=0 or CI is set)")
            return
        terminalreporter.write_line(
            f"memo: {self.left_out} test(s) left out: each passed before on byte-identical inputs "
            "(tests/_memo.py; `make test FULL=1` runs every test)")


def pytest_configure(config):
    config.addinivalue_line("markers", "spawned_reads_seen: the processes this test starts read nothing of the "
                            "repository but code, what the test opened, what its own server sent (tests/_memo.py)")
    config.pluginmanager.register(Memo(config), "attn-memo")
