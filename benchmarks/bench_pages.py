"""Benchmark of the built site as a reader's browser loads it (issue 30): weight, speed, layout shift.

Serves a built site (default ``_build/html``) on 127.0.0.1 and opens every chapter in headless
Chromium (``/usr/bin/chromium``, or ``$CHROMIUM``), once at 1280 px with the CPU slowed 4x
(Chromium's ``Emulation.setCPUThrottlingRate``, a phone-class CPU) and once at 375 px. Per page:

  * raw MiB / gzip MiB: the bytes of every file the page loads, as served, and gzipped (level 6,
    what a host that compresses sends; PNGs and woff fonts barely shrink);
  * fixed MiB: the part of that which every page of the site loads (theme, icons, MathJax, search
    index): the weight a reader pays before any content;
  * drawn s (4x): seconds from navigation until every widget on the page is drawn (no widget
    view left empty), or the load event on a page without widgets;
  * math s (4x): seconds until MathJax has drawn the page's formulas (it is loaded after the
    widgets: _ext/static/mha-mathjax.js);
  * CLS (4x): Cumulative Layout Shift until then, plus 1.5 s (0.1 is "good");
  * text px 375 / 1280: the smallest figure scale times 13.9 px, i.e. how high 10-pt text of a
    figure drawn at 100 dpi is on screen (9 px is the book's floor); widget frames apart: the
    largest widget-frame scale at 1280 px (above 1 is a stretched, blurred frame).

The machine's speed moves by 20-30 % within minutes (MAINTAINING.md): compare two builds run one
after the other, not against figures from another hour. Results: benchmarks/results/bench_pages.json.

Run:  .venv/bin/python benchmarks/bench_pages.py [site folder] [--out results.json]
"""
from __future__ import annotations

import argparse
import functools
import gzip
import http.server
import json
import os
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "bench_pages.json"
TEXT_PX = 10 / 72 * 100   # 10-pt text drawn at 100 dpi, in pixels

_CLS = """window.__cls = 0; new PerformanceObserver(list => {
  for (const e of list.getEntries()) if (!e.hadRecentInput) window.__cls += e.value;
}).observe({type: 'layout-shift', buffered: true});"""
_DRAWN = """() => { const views = document.querySelectorAll('script[type="application/vnd.jupyter.widget-view+json"]').length;
  return views === 0 || document.querySelectorAll('.widget-subarea .jupyter-widgets').length >= views; }"""
_MATH = """() => window.MathJax && MathJax.startup && MathJax.startup.promise
  && (window.__mathDone || (MathJax.startup.promise.then(() => { window.__mathDone = true; }), false))"""
_PICTURES = """async () => { const imgs = Array.from(document.querySelectorAll('.bd-article img'))
    .filter(i => i.checkVisibility() && i.naturalWidth > 50);
  await Promise.all(imgs.map(i => i.decode().catch(() => null)));
  return imgs.map(i => ({scale: i.getBoundingClientRect().width / i.naturalWidth, widget: !!i.closest('.jupyter-widgets')})); }"""


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def serve(site: Path) -> str:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(site)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_address[1]}/"


def measure(site: Path) -> dict:
    from playwright.sync_api import sync_playwright

    base = serve(site)
    pages = sorted(p.relative_to(site).as_posix() for p in (site / "book").glob("*.html"))
    results, loaded = {}, {}
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=os.environ.get("CHROMIUM", "/usr/bin/chromium"))
        for path in pages:
            row = results[path] = {}
            context = browser.new_context(viewport={"width": 1280, "height": 800})
            page = context.new_page()
            page.add_init_script(_CLS)
            urls = []
            page.on("requestfinished", lambda request: urls.append(request.url))
            cdp = context.new_cdp_session(page)
            cdp.send("Emulation.setCPUThrottlingRate", {"rate": 4})
            start = time.monotonic()
            page.goto(base + path, wait_until="load")
            while not page.evaluate(_DRAWN) and time.monotonic() - start < 60:
                page.wait_for_timeout(100)
            row["drawn_s_4x"] = round(time.monotonic() - start, 2)
            # MathJax comes after the widgets (_ext/static/mha-mathjax.js): when its formulas are drawn
            if page.evaluate("() => !!document.querySelector('.math')"):
                page.wait_for_function(_MATH, timeout=60_000, polling=100)
                row["math_s_4x"] = round(time.monotonic() - start, 2)
            else:
                row["math_s_4x"] = None
            page.wait_for_timeout(1500)
            row["cls_4x"] = round(page.evaluate("window.__cls"), 4)
            cdp.send("Emulation.setCPUThrottlingRate", {"rate": 1})
            page.wait_for_load_state("networkidle")
            pictures_1280 = page.evaluate(_PICTURES)
            context.close()
            files = {u[len(base):].split("?")[0].split("#")[0] for u in urls if u.startswith(base)}
            loaded[path] = {f for f in files if (site / f).is_file()}
            context = browser.new_context(viewport={"width": 375, "height": 812})
            page = context.new_page()
            page.goto(base + path, wait_until="load")
            page.wait_for_load_state("networkidle")
            page.wait_for_function(_DRAWN, timeout=60_000)
            pictures_375 = page.evaluate(_PICTURES)
            context.close()
            for width, pictures in ((375, pictures_375), (1280, pictures_1280)):
                figures = [p["scale"] for p in pictures if not p["widget"]]
                row[f"text_px_{width}"] = round(TEXT_PX * min(figures), 1) if figures else None
            frames = [p["scale"] for p in pictures_1280 if p["widget"]]
            row["widget_frame_scale_max_1280"] = round(max(frames), 2) if frames else None
        browser.close()
    fixed = set.intersection(*loaded.values()) if loaded else set()
    sizes = {f: (site / f).stat().st_size for files in loaded.values() for f in files}
    zipped = {f: len(gzip.compress((site / f).read_bytes(), 6)) for f in sizes}
    for path, files in loaded.items():
        row = results[path]
        row["raw_mib"] = round(sum(sizes[f] for f in files) / 2**20, 2)
        row["gzip_mib"] = round(sum(zipped[f] for f in files) / 2**20, 2)
        row["fixed_mib"] = round(sum(sizes[f] for f in files & fixed) / 2**20, 2)
        row["fixed_gzip_mib"] = round(sum(zipped[f] for f in files & fixed) / 2**20, 2)
        row["requests"] = len(files)
    return results


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("site", nargs="?", default=str(ROOT / "_build" / "html"))
    parser.add_argument("--out", default=str(RESULTS))
    args = parser.parse_args()
    results = measure(Path(args.site))
    print(f"{'page':24} {'raw MiB':>7} {'gzip':>5} {'fixed':>5} {'fixed gz':>8} {'drawn s 4x':>10} {'math s':>6} {'CLS 4x':>6} "
          f"{'text px 375':>11} {'1280':>5} {'frame x':>7}")
    for path, r in results.items():
        print(f"{Path(path).stem[:24]:24} {r['raw_mib']:7.2f} {r['gzip_mib']:5.2f} {r['fixed_mib']:5.2f} "
              f"{r['fixed_gzip_mib']:8.2f} {r['drawn_s_4x']:10.1f} {r['math_s_4x'] or '-':>6} {r['cls_4x']:6.3f} "
              f"{r['text_px_375'] or '-':>11} {r['text_px_1280'] or '-':>5} {r['widget_frame_scale_max_1280'] or '-':>7}")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
