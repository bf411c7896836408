"""Live Code (_ext/mha_live.py, _ext/static/mha-live.js): a chapter's cells run on the page.

A Jupyter server of this repository's environment is started on 127.0.0.1 the way ``make live``
starts it (scripts/lab.py ``live_command``: a token, and the site's origin allowed), and chapter 05
is opened with the address ending ``make live`` prints. Then, as a reader: press Live Code in the
launch menu; run a cell and see its output; run the widget cell, move its slider with the keyboard
and see the picture change; write a wrong answer, run the exercise's check cell and see the verdict.
Nothing may come from off the site but the server itself.
"""
from __future__ import annotations

import hashlib
import os
import secrets
import sys
import urllib.request
from urllib.parse import urlsplit

import pytest

from conftest import REPO_ROOT, jupyter_server

PAGE = "book/05_narrow_heads.html"
SHOWN = "div.cell:not(.mha-live-hidden) .thebe-cell"   # the live cells the reader sees


@pytest.fixture(scope="module")
def live_server(site_server, tmp_path_factory):
    import lab as lab_script  # scripts/ is on pytest's pythonpath (pyproject.toml)

    tmp = tmp_path_factory.mktemp("live")
    (tmp / "notebooks").mkdir()          # the kernels' folder, as in make lab and on Binder
    origin = "{0.scheme}://{0.netloc}".format(urlsplit(site_server))
    port, token = lab_script.free_port(0), secrets.token_hex(16)
    env = {**os.environ,
           "PYTHONPATH": os.pathsep.join([str(REPO_ROOT / "src"), os.environ.get("PYTHONPATH", "")]),
           "JUPYTER_RUNTIME_DIR": str(tmp / "runtime"),
           "JUPYTER_CONFIG_DIR": str(tmp / "config"),
           "JUPYTERLAB_SETTINGS_DIR": str(tmp / "settings"),
           "JUPYTERLAB_WORKSPACES_DIR": str(tmp / "workspaces"),
           "PYDEVD_DISABLE_FILE_VALIDATION": "1"}
    env.pop("MPLBACKEND", None)
    url = f"http://127.0.0.1:{port}/"
    with jupyter_server(lab_script.live_command(port, token, origin, tmp, sys.executable), tmp, env,
                        tmp / "server.log", url, token, "the server"):
        yield url, token, lab_script.live_query(port, token)


def test_live_code_runs_cells_widgets_and_checks(chromium, site_server, site_dir, live_server):
    if not (site_dir / PAGE).is_file():
        pytest.fail(f"{PAGE} is not built: scripts/build_chapter.py 05 (MHA_SITE_DIR) or make site",
                    pytrace=False)
    server, token, query = live_server
    allowed = ("{0.scheme}://{0.netloc}/".format(urlsplit(site_server)), server, "data:", "blob:")
    context = chromium.new_context(viewport={"width": 1280, "height": 900}, service_workers="block")
    offsite, errors = [], []

    def route(r):
        if r.request.url.startswith(allowed):
            r.continue_()
        else:
            offsite.append(r.request.url)
            r.abort("blockedbyclient")

    context.route("**/*", route)
    page = context.new_page()
    page.on("console", lambda m: m.type == "error" and errors.append(m.text))
    page.on("pageerror", lambda e: errors.append(str(e)))
    try:
        page.goto(site_server + PAGE + query, wait_until="load")
        assert "token=" not in page.url, "the token stays in the address bar"
        assert not page.evaluate("typeof window.thebe !== 'undefined'"), "thebe loads before Live Code"

        # 1. Live Code, from the launch menu (the rocket).
        page.locator(".dropdown-launch-buttons > button").click()
        page.get_by_role("button", name="Live Code").click()
        page.wait_for_function("document.documentElement.classList.contains('mha-live-ready')",
                               timeout=60_000)
        cells = page.locator(SHOWN)
        assert cells.count() >= 11, cells.count()
        assert page.locator(".solution .thebe-cell").count() == 0, "a solution became a live cell"
        assert page.locator(".solution .cell_input pre").count() >= 2, "the solutions' code is gone"

        def run(i, timeout=60_000):
            """Press the cell's run button; wait until it is done; return its output area."""
            cell = cells.nth(i)
            cell.scroll_into_view_if_needed()
            cell.locator(".thebe-run-button").click()
            page.wait_for_function(
                "([sel, i]) => document.querySelectorAll(sel)[i]"
                ".querySelector('.thebe-busy').style.display === 'none'", arg=[SHOWN, i], timeout=timeout)
            return cell.locator("xpath=ancestor::div[contains(concat(' ', @class, ' '), ' cell ')][1]"
                                ).locator("[data-output]")

        def source(i):
            return cells.nth(i).locator(".CodeMirror-code").inner_text()

        # 2. A cell and its output: the sweep's rows at q = -5, 0 and 5 (computed by the kernel).
        assert "import mha" in source(0)
        run(0)
        assert "q_sweep_weights" in source(2)
        run(1)
        text = run(2).locator(".jp-OutputArea").inner_text()        # drawn by thebe, not the build
        assert "array(" in text and "[0.333, 0.333, 0.333]" in text, text   # q = 0: equal weights

        # 3. The widget cell: a slider whose picture changes when the slider moves.
        widget_cell = next(i for i in range(cells.count()) if "mha.widgets.q_sweep" in source(i))
        for i in range(3, widget_cell):
            if cells.nth(i).locator(".thebe-run-button").is_visible():  # not the folded figure cells
                run(i)
        widget = run(widget_cell).locator(".jp-OutputArea .mha-q-sweep")
        # the code the page does not show (its glue cells) ran before the shown cells after it
        hidden = page.locator(".mha-live-hidden .thebe-cell")
        assert hidden.count() >= 2, "the page's remove-cell code is not among the live cells"
        ran = page.evaluate("""([sel, i]) => {
            const shown = document.querySelectorAll(sel)[i];
            return window.thebe.notebook.cells.filter(c => {
                const el = document.querySelector('.mha-live-hidden [data-thebe-id="' + c.id + '"]');
                return el && (el.compareDocumentPosition(shown) & Node.DOCUMENT_POSITION_FOLLOWING);
            }).map(c => Boolean(c.mhaRan)); }""", [SHOWN, widget_cell])
        assert ran and all(ran), ran
        widget.wait_for(timeout=30_000)
        image = widget.locator("img").first
        picture = lambda: hashlib.sha256(image.get_attribute("src").encode()).hexdigest()  # noqa: E731
        before = picture()
        handle = widget.get_by_role("slider")
        assert handle.get_attribute("aria-valuetext") == "q = +0.00"
        handle.focus()
        page.keyboard.press("ArrowRight")
        page.keyboard.press("ArrowRight")
        page.wait_for_function("h => h.getAttribute('aria-valuetext') === 'q = +1.00'",
                               arg=handle.element_handle(), timeout=10_000)
        page.wait_for_timeout(300)
        assert picture() != before, "the picture did not change with the slider"

        # 4. An exercise: a wrong answer, then its check cell's verdict.
        answer = next(i for i in range(cells.count()) if source(i).lstrip("0123456789 \n").startswith("answer = ..."))
        assert 'mha.checks.check("ex-q-love", answer)' in source(answer + 1)
        editor = cells.nth(answer).locator(".CodeMirror")
        editor.scroll_into_view_if_needed()
        editor.click()
        page.keyboard.press("Control+a")
        page.keyboard.type("answer = 1.0")
        run(answer)
        verdict = run(answer + 1).locator(".jp-OutputArea").inner_text()
        assert "Not quite" in verdict and "(ex-q-love)" in verdict, verdict
    finally:
        context.close()
    assert offsite == [], offsite
    assert errors == [], errors


def test_make_live_serves_the_built_site(site_dir, tmp_path):
    """`make live` with no ORIGIN serves _build/html itself at the origin its server allows."""
    import socket

    import lab as lab_script

    with socket.socket() as probe:           # a free port for the site
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    origin = f"http://127.0.0.1:{port}"
    lab_script.serve_site(site_dir, origin)
    with urllib.request.urlopen(f"{origin}/{PAGE}", timeout=10) as reply:
        page = reply.read().decode("utf-8")
    assert "mha-live" in page, "the served chapter has no Live Code"
    with pytest.raises(SystemExit, match="make site"):
        lab_script.serve_site(tmp_path, origin)   # no built site: a clear message
    with pytest.raises(SystemExit, match="ORIGIN"):
        lab_script.serve_site(site_dir, origin)   # the port is taken now
    assert lab_script.live_command(8888, "t", origin + "/")[-1] == f"--ServerApp.allow_origin={origin}"
