"""The reader's path on Binder and with `make lab`: chapters open and run as notebooks in JupyterLab.

A JupyterLab like Binder's (the `lab_server` fixture in conftest.py: the .venv's JupyterLab
4.4.9, scripts/lab.py's command line, postBuild's settings, on 127.0.0.1 with a token) serves
the notebook edition. For chapters 01, 04, 05, 06, 09 and 11, headless Chromium opens the chapter at the
path its launch button opens (lab/tree/notebooks/NN_slug.ipynb), runs every cell through the
Run menu, and checks that:

* it opened as a notebook, and every code cell ran, with no error and no stderr output;
* no rendered Markdown shows raw MyST (roles, directives, targets, solution markers);
* solutions sit in closed <details> blocks until the reader opens them;
* a wrong answer typed into the exercise's answer cell gets a specific ✗, and the solution's code
  (read from its <details> block) gets ✓;
* (04 and 05) a slider moved with the keyboard changes the picture next to it, and its readout
  (read-only text, no editable box) follows;
* (06 and 09) each picker of the explorer and of the head browser is named with its group ("layer",
  "head", "head width") and says which item is chosen, in Chromium's accessibility tree, with no
  script of the site (mha-a11y.js does not run here); choosing another item with the keyboard
  (Space, an arrow key, Enter) changes the picture and what the picker says;
* saving (Ctrl-S) writes notebooks/NN_slug.ipynb and leaves `git status` and book/ unchanged.

Times to open and run each chapter are printed (pytest -s) and kept in _build/lab-timings.json.
"""
from __future__ import annotations

import json
import re
import subprocess
import time
from pathlib import Path

import nbformat
import pytest

from conftest import ax_controls, picker_moves_picture, tree_digest

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
RAW_MYST = re.compile(r"\{[a-z][\w:-]*\}`|```\s*\{|^\s*:::|\{solution-(start|end)\}|"
                      r"^\s*\([\w-]+\)=\s*$|^\s*:(class|label|tags|pyobject):", re.M)

# chapter -> (answer cell source that is wrong, words the ✗ message must contain)
WRONG = {
    "01_one_head": ("row = S[2] / 2\nrow[1] = 0\nanswer = np.exp(row) / np.exp(row).sum()",
                    "does not hide a key"),
    "04_wide_or_narrow": ("def head_entropy(A):\n"
                          "    A = np.asarray(A, dtype=float)\n"
                          "    return -(A * np.log(np.where(A > 0, A, 1.0))).sum(axis=-1).sum(axis=-1)",
                          "added the entropies"),
    "06_how_many_heads": ("answer = {\"by BLEU\": \"first\", \"by perplexity\": \"second\","
                          " \"overall\": \"first\"}",
                          "one more run"),
    "05_narrow_heads": ("answer = 5.0", "largest key wins"),
    "09_real_heads": ("def previous_token_mass(A):\n"
                      "    return np.diagonal(A, -1).sum() / A.shape[-1]",
                      "divided by T"),
    "11_induction_heads": ("answer = {'without_layer_1': 0, 'two_back': 1}",
                           "that is the intact toy"),
}
SLIDER_CHAPTERS = {"04_wide_or_narrow", "05_narrow_heads"}
# chapter -> (the widget's CSS class, the names of its pickers)
PICKERS = {"06_how_many_heads": (".mha-lookup", ("head width",)),
           "09_real_heads": (".mha-heads-minilm", ("head", "layer"))}
TIMINGS = ROOT / "_build" / "lab-timings.json"

_PROMPTS_DONE_JS = """
() => {
  // cells whose source starts folded (remove-cell, hide-input) show a placeholder, not a prompt
  const panel = document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden)');
  const cells = Array.from(panel.querySelectorAll('.jp-Notebook .jp-CodeCell'));
  const shown = cells.filter(c => !c.querySelector('.jp-InputPlaceholder'));
  const prompts = shown.map(c => c.querySelector('.jp-InputPrompt').textContent.trim());
  const indicator = panel.querySelector('.jp-Notebook-ExecutionIndicator');
  return {total: prompts.length, done: prompts.filter(t => /^\\[\\d+\\]:$/.test(t)).length,
          busy: prompts.filter(t => t.includes('*')).length,
          idle: !!indicator && indicator.dataset.status === 'idle'};
}
"""


_READOUT_JS = """(root) => {
  const shown = el => el.checkVisibility();
  const text = Array.from(root.querySelectorAll('.mha-readout .widget-html-content')).find(shown);
  return {text: text ? text.innerText.trim() : null,
          editable: Array.from(root.querySelectorAll('.widget-readout, .mha-readout'))
            .filter(r => shown(r) && (r.isContentEditable || r.querySelector('[contenteditable=true]'))).length};
}"""


def pickers_name_their_group_and_choice(page, widget, groups):
    """Each picker in ``widget`` says its group and its chosen item; the keyboard changes both and the picture."""
    widget.scroll_into_view_if_needed()
    for group in groups:
        print(f"{group!r} picker in the accessibility tree: {ax_controls(page, widget)}")
        # Space opens the list, Enter takes the item: the notebook takes a closed list's arrow keys
        move = picker_moves_picture(page, widget, group, open_list=True, timeout=10)
        before, after = move["said"]
        assert after != before, f"the {group!r} picker still says {before!r} after a key press"
        assert move["picture"][0] != move["picture"][1], f"choosing {group} {after} left the picture as it was"


def git_status() -> list[str]:
    out = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=ROOT,
                         capture_output=True, text=True, check=True).stdout
    return sorted(out.splitlines())


def read_when_written(path, deadline: float):
    """The notebook at ``path`` once the server has finished writing it.

    The file's time changes when the server starts writing; a busy machine can show it empty or
    half written for a moment after that (seen once: "Notebook does not appear to be JSON: ''").
    """
    while True:
        try:
            return nbformat.read(path, as_version=4)
        except (nbformat.reader.NotJSONError, ValueError):
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def wait_for_run(page, expected: int, timeout_s: float) -> dict:
    deadline = time.monotonic() + timeout_s
    state = {}
    while time.monotonic() < deadline:
        state = page.evaluate(_PROMPTS_DONE_JS)
        if state["total"] == expected and state["done"] == expected and not state["busy"] \
                and state["idle"]:
            return state
        page.wait_for_timeout(250)
    raise AssertionError(f"cells still running or not run after {timeout_s:.0f} s: {state}")


def run_cell(page, cell, source: str):
    """Replace a code cell's source (as typed text) and run it with Shift+Enter."""
    cell.locator(".cm-content").click()
    page.keyboard.press("Control+a")
    page.keyboard.insert_text(source)
    page.keyboard.press("Shift+Enter")


def record_timing(stem: str, seconds: float):
    TIMINGS.parent.mkdir(exist_ok=True)
    data = json.loads(TIMINGS.read_text()) if TIMINGS.is_file() else {}
    data[stem] = round(seconds, 1)
    TIMINGS.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")


@pytest.mark.parametrize("stem", sorted(WRONG))
def test_chapter_runs_in_jupyterlab(stem, lab_server, chromium, slider_moves_picture):
    written = lab_server.edition.get(stem, "missing")
    assert not written.startswith(("failed", "missing")), f"notebook edition of {stem}: {written}"
    path = ROOT / "notebooks" / f"{stem}.ipynb"
    nb = nbformat.read(path, as_version=4)
    code_cells = [i for i, c in enumerate(nb.cells) if c.cell_type == "code"]
    shown_code = [i for i in code_cells if not nb.cells[i].metadata.get("jupyter", {}).get("source_hidden")]
    markdown_cells = [i for i, c in enumerate(nb.cells) if c.cell_type == "markdown"]
    solution = next(i for i, c in enumerate(nb.cells)
                    if c.cell_type == "markdown" and "<summary><strong>Solution" in c.source)
    check_index, answer_index = solution - 1, solution - 2
    assert "mha.checks.check(" in nb.cells[check_index].source, "no check cell before the solution"
    status_before, book_before = git_status(), tree_digest(ROOT / "book")
    mtime_before = path.stat().st_mtime_ns

    context = chromium.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    console_errors = []
    page.on("console", lambda m: m.type == "error" and console_errors.append(m.text))
    try:
        start = time.monotonic()
        page.goto(lab_server.open_url(f"lab/tree/notebooks/{stem}.ipynb") + "&reset")
        notebook = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook")
        notebook.wait_for(timeout=60_000)
        cells = notebook.locator(".jp-Cell")
        page.wait_for_function("n => document.querySelectorAll("
                               "'.jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook .jp-Cell').length === n",
                               arg=len(nb.cells), timeout=60_000)

        # the kernel is up (the toolbar's execution indicator says idle)
        page.locator('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook-ExecutionIndicator'
                     '[data-status="idle"]').wait_for(timeout=90_000)
        page.locator(".jp-StatusBar-Item", has_text=re.compile(r"\| Idle")).first.wait_for(timeout=90_000)
        # Run -> Run All Cells, through the menu bar. A click that lands while the kernel's
        # connection is still settling can be lost: then no cell is queued, and it is repeated.
        for attempt in range(3):
            page.locator("#jp-MainMenu .lm-MenuBar-itemLabel", has_text=re.compile(r"^Run$")).click()
            page.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^Run All Cells$")).click()
            try:
                page.wait_for_function("() => Array.from(document.querySelectorAll("
                                       "'.jp-NotebookPanel:not(.lm-mod-hidden) .jp-InputPrompt'))"
                                       ".some(p => /\\[(\\*|\\d+)\\]/.test(p.textContent))",
                                       timeout=20_000)
                break
            except Exception:
                print(f"{stem}: Run All Cells queued nothing (attempt {attempt + 1})")
        wait_for_run(page, len(shown_code), 240)
        seconds = time.monotonic() - start
        record_timing(stem, seconds)
        print(f"\n{stem}: opened and ran {len(code_cells)} code cells in {seconds:.1f} s")

        # opened as a notebook, every output clean
        assert notebook.count() == 1
        errors = notebook.locator('.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]')
        assert errors.count() == 0, "error or stderr output:\n" + "\n---\n".join(
            t[:500] for t in errors.all_inner_texts())

        # Markdown rendered, no raw MyST, solutions closed
        rendered = notebook.locator(".jp-MarkdownCell .jp-MarkdownOutput")
        assert rendered.count() == len(markdown_cells), "some Markdown cells are not rendered"
        texts = rendered.all_text_contents()
        raw = [m.group(0) for t in texts for m in RAW_MYST.finditer(t)]
        assert not raw, f"raw MyST in rendered Markdown: {raw[:10]}"
        assert not any("{glue" in t or "{numref" in t or "{doc}" in t for t in texts)
        details = notebook.locator(".jp-MarkdownOutput details")
        assert details.count() >= 1
        opened = page.evaluate("() => Array.from(document.querySelectorAll("
                               "'.jp-MarkdownOutput details')).filter(d => d.open).length")
        assert opened == 0, f"{opened} <details> blocks are open before the reader opens them"
        sol_block = cells.nth(solution).locator("details")
        assert sol_block.locator("pre").first.is_hidden(), "the solution's code is visible"

        # a slider moved with the keyboard changes its picture
        if stem in SLIDER_CHAPTERS:
            widget = notebook.locator(".jp-OutputArea-output", has=page.locator(".noUi-handle")).first
            widget.scroll_into_view_if_needed()
            readout_before = widget.evaluate(_READOUT_JS)
            move = slider_moves_picture(page, widget)
            assert move.value_before != move.value_after, "the slider did not move"
            assert move.picture_changed, "the picture did not change when the slider moved"
            # the readout beside the slider is read-only text that follows it (no script of the
            # site runs here: mha.widgets.frames.readout_row does it with the widgets alone)
            readout_after = widget.evaluate(_READOUT_JS)
            assert readout_before["editable"] == readout_after["editable"] == 0, readout_after
            assert readout_before["text"] and readout_after["text"] != readout_before["text"], \
                (readout_before, readout_after)

        # the pickers say their group and their chosen item (no script of the site runs here)
        if stem in PICKERS:
            css, groups = PICKERS[stem]
            widget = notebook.locator(".jp-OutputArea-output", has=page.locator(css)).first
            pickers_name_their_group_and_choice(page, widget, groups)

        # a wrong answer gets a specific ✗, the solution's code gets ✓
        wrong_source, words = WRONG[stem]
        answer_cell, check_cell = cells.nth(answer_index), cells.nth(check_index)
        run_cell(page, answer_cell, wrong_source)
        page.keyboard.press("Shift+Enter")              # the check cell is selected next
        verdict = check_cell.locator(".mha-verdict-wrong", has_text=words)
        verdict.wait_for(timeout=60_000)
        message = verdict.inner_text()
        assert "✗" in message and words in message, message
        sol_block.locator("summary").click()
        solution_code = sol_block.locator("pre").first.inner_text()
        run_cell(page, answer_cell, solution_code)
        page.keyboard.press("Shift+Enter")
        check_cell.locator(".mha-verdict-correct").wait_for(timeout=60_000)
        assert "✓" in check_cell.locator(".mha-verdict-correct").inner_text()
        assert check_cell.locator(".mha-verdict-wrong").count() == 0

        # save: the copy in notebooks/ changes, the book's sources and git status do not
        notebook.click(position={"x": 5, "y": 5})
        page.keyboard.press("Escape")
        page.keyboard.press("Control+s")
        deadline = time.monotonic() + 30
        while path.stat().st_mtime_ns == mtime_before and time.monotonic() < deadline:
            time.sleep(0.2)
        assert path.stat().st_mtime_ns != mtime_before, "Ctrl-S did not save the notebook"
        saved = read_when_written(path, deadline)
        assert wrong_source not in saved.cells[answer_index].source  # the solution was saved
        assert git_status() == status_before, "saving changed git status"
        assert tree_digest(ROOT / "book") == book_before, "saving changed book/"

        bad = [e for e in console_errors if re.search(r"Failed to create module|RUNTIME-\d+|jupytext", e)]
        assert not bad, f"JupyterLab extensions failed to load: {bad}"
    except BaseException:
        shot = ROOT / "_build" / f"lab-failure-{stem}.png"
        page.screenshot(path=str(shot), full_page=False)
        print(f"screenshot of the failure: {shot}")
        raise
    finally:
        context.close()
        lab_server.shutdown_kernels()
