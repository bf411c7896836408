#!/usr/bin/env python3
"""Run the book's notebook edition in JupyterLab on this machine: ``make lab``.

Starts ``jupyter lab`` from the book's virtual environment, bound to 127.0.0.1 only, with a
random token, on the repository (as Binder does) and opening in ``notebooks/``. Prints the URL
to open; Ctrl-C stops the server (no confirmation prompt).

``python scripts/lab.py live [ORIGIN]`` (``make live``) starts the same server for the site's "Live Code"
(``_ext/mha_live.py``): it also lets the pages of ORIGIN (default: the site on this machine,
``http://127.0.0.1:8000``, where it then serves ``_build/html`` itself) talk to it, and prints the
address ending to add to a chapter's address (``?jupyter=...&token=...``); the site remembers it for
the other pages.

``python scripts/lab.py settings`` only writes the JupyterLab settings the book uses into the
environment's ``share/jupyter/lab/settings/overrides.json`` (Binder's ``postBuild`` runs it):
no news feed and no update check (both would ask the reader, then fetch from the internet).
The tests start the same server with :func:`lab_command`.
"""
from __future__ import annotations

import json
import os
import secrets
import socket
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = "notebooks"
OVERRIDES = {
    "@jupyterlab/apputils-extension:notification": {"fetchNews": "false", "checkForUpdates": False},
}


def write_settings(prefix: str | Path = sys.prefix) -> Path:
    """Merge the book's JupyterLab defaults into <prefix>/share/jupyter/lab/settings/overrides.json."""
    path = Path(prefix) / "share" / "jupyter" / "lab" / "settings" / "overrides.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    current = json.loads(path.read_text()) if path.is_file() else {}
    for plugin, values in OVERRIDES.items():
        current.setdefault(plugin, {}).update(values)
    path.write_text(json.dumps(current, indent=2) + "\n")
    return path


def free_port(preferred: int = 8888) -> int:
    for port in (preferred, 0):
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return s.getsockname()[1]
    raise RuntimeError("no free port on 127.0.0.1")


def lab_command(port: int, token: str, root: Path = ROOT, python: str = sys.executable) -> list[str]:
    """The ``jupyter lab`` command line: loopback only, a token, no browser, no prompts."""
    cmd = [python, "-m", "jupyterlab",
           "--no-browser",
           "--ServerApp.ip=127.0.0.1",
           f"--ServerApp.port={port}",
           "--ServerApp.port_retries=0",
           f"--IdentityProvider.token={token}",
           f"--ServerApp.root_dir={root}",
           f"--LabApp.default_url=/lab/tree/{NOTEBOOKS}",
           "--ServerApp.answer_yes=True"]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        cmd.append("--allow-root")
    return cmd


LIVE_ORIGIN = "http://127.0.0.1:8000"


def live_command(port: int, token: str, origin: str, root: Path = ROOT,
                 python: str = sys.executable) -> list[str]:
    """:func:`lab_command` that also answers the pages of ``origin`` (the site's Live Code)."""
    return lab_command(port, token, root, python) + [f"--ServerApp.allow_origin={origin.rstrip('/')}"]


def live_query(port: int, token: str) -> str:
    """What to add to a chapter's address so that its Live Code uses this server."""
    return f"?jupyter=http://127.0.0.1:{port}/&token={token}"


def serve_site(site: Path = ROOT / "_build" / "html", origin: str = LIVE_ORIGIN) -> None:
    """Serve the built site at ``origin`` (127.0.0.1 only), in a thread, for ``make live``'s default."""
    import functools
    import http.server
    import threading
    from urllib.parse import urlsplit

    if not (site / "index.html").is_file():
        sys.exit(f"the site is not built ({site}): run `make site` first")
    where = urlsplit(origin)
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(site))
    handler.log_message = lambda *args: None
    try:
        server = http.server.ThreadingHTTPServer((where.hostname, where.port), handler)
    except OSError as err:
        sys.exit(f"cannot serve the site at {origin} ({err}): free the port, or serve the site "
                 f"yourself and give its address: make live ORIGIN=<address>")
    threading.Thread(target=server.serve_forever, daemon=True).start()
    print(f"The site, served from {site} at {origin}/", flush=True)


def main(argv: list[str]) -> int:
    if argv[1:2] == ["settings"]:
        print(f"JupyterLab settings: {write_settings()}")
        return 0
    if not (ROOT / NOTEBOOKS).is_dir():
        sys.exit("notebooks/ is missing: run `make lab` or `make live` "
                 "(they build the notebook edition first)")
    write_settings()
    port, token = free_port(), secrets.token_hex(24)
    if argv[1:2] == ["live"]:
        origin = argv[2] if len(argv) > 2 else LIVE_ORIGIN
        if origin == LIVE_ORIGIN:
            serve_site()
        print(f"\nA Jupyter server for Live Code on the pages of {origin} (Ctrl-C stops it).\n"
              f"Open a chapter with this at the end of its address (once: the site remembers it):\n\n"
              f"    {live_query(port, token)}\n\n"
              f"for example {origin.rstrip('/')}/book/05_narrow_heads.html{live_query(port, token)}\n"
              f"Then press Live Code in the launch menu (the rocket).\n", flush=True)
        cmd = live_command(port, token, origin)
    else:
        url = f"http://127.0.0.1:{port}/lab/tree/{NOTEBOOKS}?token={token}"
        print(f"\nJupyterLab on the book's notebooks (Ctrl-C stops it):\n\n    {url}\n", flush=True)
        cmd = lab_command(port, token)
    proc = subprocess.Popen(cmd, cwd=ROOT)
    try:
        return proc.wait()
    except KeyboardInterrupt:
        # the server got the same Ctrl-C and shuts down by itself (answer_yes)
        try:
            return proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.terminate()
            return proc.wait()


if __name__ == "__main__":
    sys.exit(main(sys.argv))
