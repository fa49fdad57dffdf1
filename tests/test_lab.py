"""`make lab`: a JupyterLab server of .venv opens a MyST page as a notebook and runs it.

The server (started headless on a free port, as `make lab` starts it, root = book/) must hand out
the .md page through its contents API as a notebook (jupytext's contents manager), and a kernel of
that server must execute its cells. The server is stopped and no process of it is left behind.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
import uuid
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGE = "atividade4/ex1_atencao_produto_escalar.md"  # relative to the server root, book/
EXPECTED = "0,5065"  # the first attention weight of the exercise, in the weights table (decimal comma)
TOKEN = uuid.uuid4().hex

import jupyterlab  # noqa: E402,F401  (the lab stack, requirements-lab.txt: a missing one fails, never skips)
import websocket  # noqa: E402  (websocket-client, a dependency of jupyter_server)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _api(base: str, path: str, method: str = "GET", body: dict | None = None) -> dict:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(base + path, data=data, method=method,
                                     headers={"Authorization": f"token {TOKEN}",
                                              "Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as response:
        raw = response.read()
    return json.loads(raw) if raw else {}


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.fixture
def lab_server(tmp_path):
    port = _free_port()
    env = {**os.environ, "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime"),
           "JUPYTERLAB_WORKSPACES_DIR": str(tmp_path / "workspaces")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "jupyterlab", "--no-browser", f"--port={port}", "--ServerApp.ip=127.0.0.1",
         f"--IdentityProvider.token={TOKEN}", f"--ServerApp.root_dir={ROOT / 'book'}",
         "--ServerApp.port_retries=0", "--allow-root"],  # CI runs as root
        stdout=subprocess.DEVNULL, stderr=(tmp_path / "lab.log").open("w"), env=env,
        start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                _api(base, "/api/status")
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    pytest.fail("JupyterLab did not start:\n" + (tmp_path / "lab.log").read_text())
                time.sleep(0.1)  # the server takes seconds to start; answer within 0.1 s of it
        yield base
    finally:
        try:
            _api(base, "/api/shutdown", method="POST", body={})
            proc.wait(timeout=30)
        except Exception:
            if _group_alive(proc.pid):
                os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=30)
        deadline = time.monotonic() + 30
        while _group_alive(proc.pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        left = _group_alive(proc.pid)
        if left:
            os.killpg(proc.pid, signal.SIGKILL)
        assert not left, "a process of the lab server (a kernel?) outlived its shutdown"


def _execute(ws, code: str) -> list[dict]:
    """Run one cell on the kernel's channels websocket; return its iopub outputs."""
    msg_id = uuid.uuid4().hex
    ws.send(json.dumps({
        "header": {"msg_id": msg_id, "msg_type": "execute_request", "username": "test", "session": "test",
                   "version": "5.3", "date": ""},
        "parent_header": {}, "metadata": {}, "channel": "shell", "buffers": [],
        "content": {"code": code, "silent": False, "store_history": True, "user_expressions": {},
                    "allow_stdin": False, "stop_on_error": True}}))
    outputs, idle, reply = [], False, None
    while not (idle and reply):
        msg = json.loads(ws.recv())
        if msg.get("parent_header", {}).get("msg_id") != msg_id:
            continue
        kind = msg["msg_type"]
        if kind == "status" and msg["content"]["execution_state"] == "idle":
            idle = True
        elif kind == "execute_reply":
            reply = msg["content"]
        elif kind in ("stream", "execute_result", "display_data", "error"):
            outputs.append({"output_type": kind, **msg["content"]})
    assert reply["status"] == "ok", f"cell failed:\n{code}\n{reply.get('ename')}: {reply.get('evalue')}"
    return outputs


@pytest.mark.full
def test_lab_opens_a_myst_page_as_a_notebook_and_runs_it(lab_server):
    model = _api(lab_server, f"/api/contents/{PAGE}?type=notebook&content=1")
    assert model["type"] == "notebook" and model["format"] == "json"
    cells = [c for c in model["content"]["cells"] if c["cell_type"] == "code"]
    assert len(cells) > 3, "jupytext did not turn the page's {code-cell} blocks into code cells"

    session = _api(lab_server, "/api/sessions", method="POST",
                   body={"path": PAGE, "type": "notebook", "name": "",
                         "kernel": {"name": model["content"]["metadata"]["kernelspec"]["name"]}})
    kernel_id = session["kernel"]["id"]
    ws = websocket.create_connection(
        lab_server.replace("http", "ws", 1) + f"/api/kernels/{kernel_id}/channels?session_id=test",
        header=[f"Authorization: token {TOKEN}"], timeout=300)
    try:
        outputs = [out for cell in cells for out in _execute(ws, "".join(cell["source"]))]
    finally:
        ws.close()
    text = "\n".join(out.get("text", "") + "".join(out.get("data", {}).get("text/plain", ""))
                     for out in outputs)
    assert EXPECTED in text
