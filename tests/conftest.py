"""Shared pytest fixtures, and the markers each test folder carries. Append new sections below; keep
each section self-contained.

The folders follow the library: ``lib/`` (src/mha, one file per module), ``checks/`` (the exercise
checkers), ``models/`` (the two trained models), ``site/`` (the build, the pages in Chromium, the
notebook edition, JupyterLab). Everything in ``site/`` is marked ``book`` (it reads the built book
or the chapters); a test that uses Chromium or JupyterLab is also marked ``browser``. So
``make test-fast`` (``lib/``, ``checks/``, ``models/``) needs no build.
"""

# =================================================================================================
# Browser fixtures: serve the built site (_build/html) on 127.0.0.1 and drive headless Chromium.
# Used by tests/test_browser.py; any test may use them (mark it `@pytest.mark.browser`).
#
#   site_dir               Path of the built site; FAILS (does not skip) when it was not built.
#                          Override with MHA_SITE_DIR (e.g. a scratch book's _build/html).
#   site_server            base URL "http://127.0.0.1:PORT/" of a local server for site_dir.
#   chromium               a playwright Browser (Debian /usr/bin/chromium, or $MHA_CHROMIUM).
#   open_page              open_page("book/x.html") -> PageVisit: a loaded page in a fresh context
#                          with every off-site request aborted and recorded, plus console/page
#                          errors and failed requests (see PageVisit).
#   slider_moves_picture   the function slider_moves_picture(page, scope=None, key=..., presses=1):
#                          moves a widget slider with the keyboard and returns the picture shown
#                          before and after (for IntSlider -> jslink -> Stack of Image widgets).
#   ax_controls, picker_choice, picker_moves_picture, visible_picture   (importable functions) the
#                          controls in a part of the page as Chromium's accessibility tree has
#                          them; the item a picker says is chosen, read from them; a drop-down
#                          list moved with the keyboard; the picture shown, by its bytes' digest.
# Playwright is imported lazily, so test modules that do not use the browser never need it.
# =================================================================================================
from __future__ import annotations

import contextlib
import dataclasses
import functools
import http.server
import os
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import yaml

REPO_ROOT = Path(__file__).resolve().parent.parent
CHROMIUM_PATH = os.environ.get("MHA_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def built_site_dir() -> Path:
    """The built site: $MHA_SITE_DIR, else <repo>/_build/html."""
    return Path(os.environ.get("MHA_SITE_DIR", REPO_ROOT / "_build" / "html")).resolve()


TESTS = Path(__file__).resolve().parent
_BROWSER_FIXTURES = {"chromium", "open_page", "site_server", "lab_server"}


def pytest_collection_modifyitems(config, items):
    """``book`` for every test in tests/site/, ``browser`` for every test that drives Chromium or JupyterLab."""
    for item in items:
        path = Path(str(item.path)).resolve()
        if path.is_relative_to(TESTS / "site"):
            item.add_marker(pytest.mark.book)
        if _BROWSER_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.browser)


@pytest.fixture(scope="session")
def site_dir() -> Path:
    site = built_site_dir()
    if not (site / "index.html").is_file():
        pytest.fail(
            f"The built site is missing: {site / 'index.html'} does not exist.\n"
            "Build the book first:  python scripts/fetch_assets.py && "
            ".venv/bin/jupyter-book build . -W -n --keep-going",
            pytrace=False,
        )
    return site


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    extensions_map = {
        **http.server.SimpleHTTPRequestHandler.extensions_map,
        ".js": "text/javascript",
        ".mjs": "text/javascript",
        ".json": "application/json",
        ".woff": "font/woff",
        ".woff2": "font/woff2",
        ".svg": "image/svg+xml",
    }

    def log_message(self, format, *args):  # noqa: A002 - keep test output clean
        pass


@pytest.fixture(scope="session")
def site_server(site_dir):
    handler = functools.partial(_QuietHandler, directory=str(site_dir))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, name="site-server", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


@pytest.fixture(scope="session")
def chromium():
    if not Path(CHROMIUM_PATH).is_file():
        pytest.fail(f"Chromium not found at {CHROMIUM_PATH}: apt-get install -y chromium "
                    "(never `playwright install`)", pytrace=False)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM_PATH, args=CHROMIUM_ARGS,
                                     headless=True)
        try:
            yield browser
        finally:
            browser.close()


@dataclasses.dataclass
class PageVisit:
    """What one page load showed. Lists hold human-readable strings for assertion messages."""

    page: object                      # playwright Page
    url: str
    requests: list = dataclasses.field(default_factory=list)        # every URL requested
    offsite: list = dataclasses.field(default_factory=list)         # aborted: not the local server
    failed: list = dataclasses.field(default_factory=list)          # HTTP >= 400 or network failure
    console_errors: list = dataclasses.field(default_factory=list)
    console_warnings: list = dataclasses.field(default_factory=list)
    page_errors: list = dataclasses.field(default_factory=list)


@pytest.fixture
def open_page(chromium, site_server):
    """open_page(path, wait_until="load", viewport=(1280, 900)) -> PageVisit, in a fresh context."""
    origin = "{0.scheme}://{0.netloc}".format(urlsplit(site_server))
    contexts = []

    def _open(path: str, wait_until: str = "load", viewport=(1280, 900)) -> PageVisit:
        width, height = viewport
        context = chromium.new_context(viewport={"width": width, "height": height},
                                       service_workers="block")
        contexts.append(context)
        page = context.new_page()
        visit = PageVisit(page=page, url=site_server + path.lstrip("/"))

        def route(r):
            url = r.request.url
            if url.startswith(("data:", "blob:")) or url.startswith(origin + "/"):
                r.continue_()
            else:
                visit.offsite.append(f"{r.request.resource_type} {url}")
                r.abort("blockedbyclient")

        context.route("**/*", route)
        page.on("request", lambda req: visit.requests.append(req.url))
        page.on("requestfailed", lambda req: "BLOCKED_BY_CLIENT" not in (req.failure or "")
                and visit.failed.append(f"{req.url} ({req.failure})"))
        page.on("response", lambda resp: resp.status >= 400 and visit.failed.append(
            f"{resp.url} (HTTP {resp.status})"))
        page.on("pageerror", lambda exc: visit.page_errors.append(str(exc)))

        def console(msg):
            where = msg.location.get("url", "") if msg.location else ""
            if where == origin + "/favicon.ico":
                # Chromium asks the server root for /favicon.ico by itself when a page
                # declares no icon (not a request of the page, and off the book when it is
                # served from a sub-path); set html.favicon in _config.yml to silence it.
                visit.console_warnings.append(text_of(msg, where))
                return
            text = text_of(msg, where)
            if msg.type == "error":
                visit.console_errors.append(text)
            elif msg.type == "warning":
                visit.console_warnings.append(text)

        def text_of(msg, where):
            return f"{msg.text} [{where}]" if where else msg.text

        page.on("console", console)
        page.goto(visit.url, wait_until=wait_until)
        return visit

    yield _open
    for context in contexts:
        context.close()


# ---- widget slider helper (importable: `from conftest import slider_moves_picture`, or use
# ---- the fixture of the same name) ---------------------------------------------------------

_VISIBLE_PICTURE_JS = """
async (scope) => {
  const imgs = Array.from((scope || document).querySelectorAll('img'))
    .filter(img => img.checkVisibility ? img.checkVisibility() : img.offsetParent !== null);
  if (!imgs.length) return null;
  const img = imgs[0];
  if (!img.complete) await new Promise(r => { img.onload = img.onerror = r; });
  let digest = '';
  try {
    const buf = await (await fetch(img.src)).arrayBuffer();
    const h = await crypto.subtle.digest('SHA-256', buf);
    digest = Array.from(new Uint8Array(h)).map(b => b.toString(16).padStart(2, '0')).join('');
  } catch (e) { digest = 'unreadable:' + e; }
  return {src: img.src, digest: digest, width: img.naturalWidth};
}
"""

_SLIDER_VALUE_JS = """
(scope) => {
  const h = (scope || document).querySelector('.noUi-handle');
  const r = (scope || document).querySelector('.widget-readout');
  return h ? (h.getAttribute('aria-valuenow') || (r && r.textContent)) : null;
}
"""


@dataclasses.dataclass
class SliderMove:
    value_before: str | None
    value_after: str | None
    src_before: str
    src_after: str
    digest_before: str       # SHA-256 of the shown image's bytes (blob: URLs differ per view)
    digest_after: str

    @property
    def picture_changed(self) -> bool:
        return self.digest_before != self.digest_after


def slider_moves_picture(page, scope=None, key: str = "ArrowRight", presses: int = 1,
                         timeout: float = 5.0) -> SliderMove:
    """Move the first widget slider in `scope` (a playwright Locator; default the whole page)
    with the keyboard and return the visible picture before and after.

    Works with ipywidgets 8 sliders (noUiSlider handle, keyboard support) linked in the browser,
    e.g. ``jslink((slider, "value"), (stack, "selected_index"))`` with a ``Stack`` of ``Image``
    frames: only the selected frame is in the DOM, so the visible <img> is compared by content.
    If the slider does not move (it sits at its end) the opposite key is pressed instead.
    Waits up to `timeout` seconds for the picture to change; check ``.picture_changed``.
    """
    root = scope.element_handle() if scope is not None else None
    handle = (scope if scope is not None else page).locator(".noUi-handle").first
    if handle.count() == 0:
        raise AssertionError("no widget slider (.noUi-handle) found")
    value_before = page.evaluate(_SLIDER_VALUE_JS, root)
    before = page.evaluate(_VISIBLE_PICTURE_JS, root)
    if before is None:
        raise AssertionError("no visible <img> found next to the slider")
    handle.focus()
    for _ in range(presses):
        handle.press(key)
    opposite = {"ArrowRight": "ArrowLeft", "ArrowLeft": "ArrowRight", "ArrowUp": "ArrowDown",
                "ArrowDown": "ArrowUp", "PageUp": "PageDown", "PageDown": "PageUp"}.get(key)
    page.wait_for_timeout(50)
    if opposite and page.evaluate(_SLIDER_VALUE_JS, root) == value_before:
        for _ in range(presses):  # the slider was at its end: go the other way
            handle.press(opposite)
    deadline = time.monotonic() + timeout
    after = before
    while time.monotonic() < deadline:
        page.wait_for_timeout(100)
        after = page.evaluate(_VISIBLE_PICTURE_JS, root) or before
        if after["digest"] != before["digest"]:
            break
    return SliderMove(value_before, page.evaluate(_SLIDER_VALUE_JS, root),
                      before["src"], after["src"], before["digest"], after["digest"])


@pytest.fixture(name="slider_moves_picture")
def _slider_moves_picture_fixture():
    return slider_moves_picture


def visible_picture(page, scope) -> dict | None:
    """The first visible <img> in ``scope`` (a Locator): {src, digest (SHA-256 of its bytes), width}."""
    return page.evaluate(_VISIBLE_PICTURE_JS, scope.element_handle())


# ---- Chromium's accessibility tree and the pickers (importable: `from conftest import ...`) ----
_AX_STATES = ("pressed", "checked", "selected", "expanded")
_AX_CONTROLS = ("button", "combobox", "listbox", "option", "radio", "radiogroup", "group", "checkbox")


def ax_controls(page, scope) -> list[dict]:
    """The controls inside ``scope`` (a Locator) as Chromium exposes them to a screen reader.

    One dict per control in the accessibility tree (CDP ``Accessibility.queryAXTree``): its role,
    accessible name, value (a combo box's shown choice) and states (pressed, checked, selected).
    Nodes left out of the tree (hidden, presentational) are not listed.
    """
    scope.evaluate("el => el.setAttribute('data-mha-ax', '')")
    cdp = page.context.new_cdp_session(page)
    try:
        root = cdp.send("DOM.getDocument", {"depth": 0})["root"]["nodeId"]
        node = cdp.send("DOM.querySelector", {"nodeId": root, "selector": "[data-mha-ax]"})["nodeId"]
        nodes = cdp.send("Accessibility.queryAXTree", {"nodeId": node})["nodes"]
    finally:
        cdp.detach()
        scope.evaluate("el => el.removeAttribute('data-mha-ax')")
    out = []
    for n in nodes:
        role = n.get("role", {}).get("value")
        if n.get("ignored") or role not in _AX_CONTROLS:
            continue
        control = {"role": role, "name": n.get("name", {}).get("value", "")}
        if n.get("value", {}).get("value") not in (None, ""):
            control["value"] = str(n["value"]["value"])
        control.update({p["name"]: p["value"].get("value") for p in n.get("properties", [])
                        if p["name"] in _AX_STATES})
        out.append(control)
    return out


def picker_choice(controls: list[dict], group: str) -> str:
    """What a screen reader hears as the chosen item of the picker named ``group`` ("layer").

    Either a combo box or list box named ``group`` (its value, or its one selected option), or a
    row of buttons or radios each named "``group`` item" with exactly one pressed or checked.
    Fails (AssertionError) when no control carries its group's name or none says which item is
    chosen: buttons named "3" with no pressed state, as ipywidgets 8 draws ToggleButtons.
    """
    same = lambda name: " ".join(name.split()).lower() == group.lower()  # noqa: E731
    for i, c in enumerate(controls):
        if c["role"] in ("combobox", "listbox") and same(c["name"]):
            if c.get("value"):
                return c["value"]
            chosen = [o["name"] for o in controls[i + 1:] if o["role"] == "option" and o.get("selected")]
            assert len(chosen) == 1, f"the {group!r} picker says no chosen item: {c}"
            return chosen[0]
    items = [c for c in controls if c["role"] in ("button", "radio")
             and c["name"].lower().startswith(group.lower() + " ")]
    assert items, f"no control is named with its group {group!r}: {controls}"
    on = [c["name"] for c in items if str(c.get("pressed", c.get("checked"))).lower() == "true"]
    assert len(on) == 1, f"{len(on)} of the {group!r} items say they are chosen: {items}"
    return on[0]


def picker_moves_picture(page, scope, group: str, open_list: bool = False, timeout: float = 5.0) -> dict:
    """Choose another item of the drop-down list named ``group`` in ``scope`` with the keyboard.

    Focuses the ``<select>`` (by its accessible name) and presses ArrowDown, or ArrowUp when it
    was on its last item. With ``open_list``, the list is opened first with Space and the item
    taken with Enter: in JupyterLab the notebook takes the arrow keys of a closed list (they move
    to another cell: ipywidgets#3912), not those of an open one. Then waits up to ``timeout``
    seconds for the picture in ``scope`` to change. Returns what the picker said
    (:func:`picker_choice`) and the picture's digest, before and after:
    ``{"said": (before, after), "picture": (before, after)}``.
    """
    before = picker_choice(ax_controls(page, scope), group)
    picture = visible_picture(page, scope)
    assert picture, f"no picture next to the {group!r} picker"
    picker = scope.get_by_role("combobox", name=group, exact=True)
    for key in ("ArrowDown", "ArrowUp"):  # ArrowUp only if ArrowDown changed nothing (the last item)
        picker.focus()
        for press in (["Space", key, "Enter"] if open_list else [key]):
            page.keyboard.press(press)
            page.wait_for_timeout(100)
        if picker_choice(ax_controls(page, scope), group) != before:
            break
    deadline, now = time.monotonic() + timeout, picture
    while now["digest"] == picture["digest"] and time.monotonic() < deadline:
        page.wait_for_timeout(100)
        now = visible_picture(page, scope) or picture
    return {"said": (before, picker_choice(ax_controls(page, scope), group)),
            "picture": (picture["digest"], now["digest"])}

# ================================ end of browser fixtures ========================================


# =================================================================================================
# The book's pages, from _toc.yml
# =================================================================================================
def tree_digest(folder: Path) -> str:
    """One SHA-256 over every file below ``folder`` (names and bytes): equal digests, unchanged tree."""
    import hashlib

    h = hashlib.sha256()
    for p in sorted(folder.rglob("*")):
        if p.is_file():
            h.update(p.relative_to(folder).as_posix().encode() + b"\0" + p.read_bytes())
    return h.hexdigest()


def toc_files() -> list[str]:
    """Every page of _toc.yml in order (the root, chapters, parts, sections), without suffix.

    The one walker of the table of contents is the notebook edition's (scripts/notebook_edition.py).
    """
    import notebook_edition  # scripts/ is on pytest's pythonpath (pyproject.toml)

    return notebook_edition.toc_files()


# =================================================================================================
# Hypothesis: no per-example deadline. CI shares two cores with other work, and a slow example is
# not a wrong one (speed targets live in benchmarks/, not in tests).
# =================================================================================================
from hypothesis import HealthCheck, settings  # noqa: E402

settings.register_profile("book", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("book")


# =================================================================================================
# JupyterLab on the notebook edition (tests/test_lab.py): the server Binder and `make lab` run.
#
#   lab_server   a session-wide JupyterLab started from the .venv with scripts/lab.py's command
#                line (127.0.0.1, a random free port, a token, root = the repository) after
#                writing the notebook edition into notebooks/ (scripts/notebook_edition.py) and the
#                settings postBuild writes. User settings, workspaces and runtime files live in a
#                temporary folder; the notebooks' windowing is off so every cell is in the DOM.
#                notebooks/ is restored at the end, and the server (with its kernels) is stopped.
# =================================================================================================
@dataclasses.dataclass
class LabServer:
    url: str            # "http://127.0.0.1:PORT/"
    token: str
    root: Path
    log: Path
    edition: dict       # chapter -> "written" | "same" | "failed: why" (notebook_edition.write_edition)

    def open_url(self, path: str) -> str:
        return f"{self.url}{path.lstrip('/')}?token={self.token}"

    def api(self, method: str, path: str):
        import json
        import urllib.request

        req = urllib.request.Request(f"{self.url}api/{path}", method=method,
                                     headers={"Authorization": f"token {self.token}"})
        with urllib.request.urlopen(req, timeout=30) as resp:
            body = resp.read()
        return json.loads(body) if body else None

    def shutdown_kernels(self):
        for kernel in self.api("GET", "kernels") or []:
            self.api("DELETE", f"kernels/{kernel['id']}")


@contextlib.contextmanager
def jupyter_server(cmd: list[str], cwd: Path, env: dict, log: Path, url: str, token: str, name: str):
    """Start a Jupyter server (``cmd``, output to ``log``), wait up to 90 s until ``url`` answers, stop it after."""
    import subprocess
    import urllib.request

    with open(log, "wb") as out:
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 90
        while True:
            if proc.poll() is not None:
                pytest.fail(f"{name} exited ({proc.returncode}):\n{log.read_text()[-3000:]}", pytrace=False)
            try:
                with urllib.request.urlopen(f"{url}api/status?token={token}", timeout=5):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    pytest.fail(f"{name} did not answer in 90 s:\n{log.read_text()[-3000:]}", pytrace=False)
                time.sleep(0.5)
        yield proc
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture(scope="session")
def lab_server(tmp_path_factory):
    import json
    import secrets
    import sys

    import lab as lab_script  # scripts/ is on pytest's pythonpath (pyproject.toml)
    import notebook_edition

    import shutil

    notebooks = REPO_ROOT / "notebooks"
    tmp = tmp_path_factory.mktemp("lab")
    backup = tmp / "notebooks-before"
    if notebooks.is_dir():
        shutil.copytree(notebooks, backup, symlinks=True)
    edition = notebook_edition.write_edition(notebooks, force=True)
    lab_script.write_settings(sys.prefix)

    settings = tmp / "settings" / "@jupyterlab" / "notebook-extension"
    settings.mkdir(parents=True)
    (settings / "tracker.jupyterlab-settings").write_text(json.dumps({"windowingMode": "none"}))
    env = {**os.environ,
           "JUPYTERLAB_SETTINGS_DIR": str(tmp / "settings"),
           "JUPYTERLAB_WORKSPACES_DIR": str(tmp / "workspaces"),
           "JUPYTER_RUNTIME_DIR": str(tmp / "runtime"),
           "JUPYTER_CONFIG_DIR": str(tmp / "config"),
           "PYDEVD_DISABLE_FILE_VALIDATION": "1"}
    env.pop("MPLBACKEND", None)
    port, token = lab_script.free_port(0), secrets.token_hex(16)
    python = str(REPO_ROOT / ".venv" / "bin" / "python")
    if not Path(python).is_file():
        python = sys.executable
    log = tmp / "lab.log"
    server = LabServer(f"http://127.0.0.1:{port}/", token, REPO_ROOT, log, edition)
    try:
        with jupyter_server(lab_script.lab_command(port, token, REPO_ROOT, python), REPO_ROOT, env, log,
                            server.url, token, "JupyterLab"):
            yield server
    finally:
        shutil.rmtree(notebooks, ignore_errors=True)   # back to what it was before the tests
        if backup.is_dir():
            shutil.copytree(backup, notebooks, symlinks=True)

# ============================ end of JupyterLab fixtures =========================================
