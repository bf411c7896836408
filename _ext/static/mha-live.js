// Live Code: run a chapter's cells where the reader reads them (_ext/mha_live.py adds this file to
// every page with code cells, and "Live Code" to the header's launch menu).
//
// It loads thebe 0.9 from the site (_static/thebe/, fetched and pinned by scripts/fetch_assets.py)
// only when the reader presses Live Code. Its kernel runs on a Jupyter server of the reader's
// (`make live` prints the address to open: the page URL with ?jupyter=SERVER&token=TOKEN, kept in
// localStorage for the other pages; ?jupyter= with no value forgets it), else on Binder.
(function () {
  "use strict";
  var script = document.currentScript;
  var here = script.src.replace(/mha-live\.js(\?.*)?$/, "");
  var KEY = "mha-live-server";

  // A server given in the address wins and is remembered; the token leaves the address bar.
  function localServer() {
    var q = new URLSearchParams(location.search);
    if (q.has("jupyter")) {
      var server = q.get("jupyter");
      if (server) localStorage.setItem(KEY, JSON.stringify({url: server, token: q.get("token") || ""}));
      else localStorage.removeItem(KEY);
      q.delete("jupyter"); q.delete("token");
      var rest = q.toString();
      history.replaceState(null, "", location.pathname + (rest ? "?" + rest : "") + location.hash);
    }
    try { return JSON.parse(localStorage.getItem(KEY) || "null"); } catch (e) { return null; }
  }
  var server = localServer();

  // thebe 0.9's widget manager fetches RequireJS from cdnjs before it makes any widget, even the
  // built-in controls. The site serves its own copy: that one request goes there instead.
  var CDN_REQUIRE = "https://cdnjs.cloudflare.com/ajax/libs/require.js/2.3.6/require.min.js";
  var siteFetch = window.fetch.bind(window);
  window.fetch = function (input, init) {
    return siteFetch(input === CDN_REQUIRE ? here + "requirejs/require.js" : input, init);
  };

  // Every code cell becomes an editor with its own output; a cell with no output gets an empty one
  // (thebe pairs inputs and outputs in page order). Solutions stay as built: "run all" does not
  // run them (as Run All Cells does not in the notebook edition, where they are folded away).
  function markCells(hidden) {
    var shown = 0;
    document.querySelectorAll("div.cell").forEach(function (cell) {
      var pre = cell.querySelector(".cell_input pre");
      if (!pre) return;
      (hidden[shown] || []).forEach(function (source) {   // code the page does not show, at its place
        var box = document.createElement("div");
        box.className = "cell mha-live-hidden";
        box.hidden = true;
        box.innerHTML = '<div class="cell_input"><pre data-executable="true" data-hidden="true"></pre></div>'
          + '<div class="cell_output" data-output="true"></div>';
        box.querySelector("pre").textContent = source;
        cell.parentNode.insertBefore(box, cell);
      });
      shown += 1;
      if (cell.closest(".solution")) return;
      pre.setAttribute("data-executable", "true");
      pre.setAttribute("data-language", "python");
      var out = cell.querySelector(":scope > .cell_output");
      if (!out) {
        out = document.createElement("div");
        out.className = "cell_output docutils container";
        cell.appendChild(out);
      }
      out.setAttribute("data-output", "true");
    });
  }

  function statusBar(text) {
    var bar = document.getElementById("mha-live-status");
    if (!bar) {
      bar = document.createElement("div");
      bar.id = "mha-live-status";
      bar.setAttribute("role", "status");
      bar.innerHTML = '<span class="mha-live-where"></span> <span class="thebe-status"></span>';
      var article = document.querySelector("article.bd-article") || document.querySelector("main") || document.body;
      article.insertBefore(bar, article.firstChild);
    }
    bar.querySelector(".mha-live-where").textContent = text;
    return bar;
  }

  // A shown cell first runs the hidden cells before it that have not run yet (sent to the kernel
  // in page order, before its own code). "run all" runs every cell, hidden ones included, once.
  function runHiddenFirst(notebook) {
    var before = [];
    (notebook.cells || []).forEach(function (cell) {
      var run = cell.execute.bind(cell);
      var isHidden = !!document.querySelector('.mha-live-hidden [data-thebe-id="' + cell.id + '"]');
      if (isHidden) {
        cell.mhaRun = function () { cell.mhaRan = true; return run(cell.source); };
        cell.execute = function () { return cell.mhaRun(); };
        before.push(cell);
      } else {
        var mine = before.slice();
        cell.execute = function (source) {
          mine.forEach(function (h) { if (!h.mhaRan) h.mhaRun(); });
          return run(source);
        };
      }
    });
  }

  var started = null;
  window.mhaLiveStart = function () {
    if (started) return started;
    var d = script.dataset;
    var options = {
      requestKernel: true,
      mountActivateWidget: false,
      mountStatusWidget: true,
      mountRestartButton: false,
      mountRestartAllButton: false,
      // thebe types text/latex with MathJax 2 calls; mha-live-mathjax.js maps them to MathJax 3.
      mathjaxUrl: here + "mha-live-mathjax.js",
      kernelOptions: {kernelName: "python3", path: d.notebook},
    };
    if (server) {
      options.useBinder = false;
      options.serverSettings = {baseUrl: server.url, token: server.token, appendToken: true};
      statusBar("Live Code: a Jupyter server at " + server.url + ".");
    } else {
      options.useBinder = true;
      options.binderOptions = {repo: d.binderRepo, ref: d.binderRef, binderUrl: d.binderUrl, repoProvider: "github"};
      statusBar("Live Code: starting a Binder server. This can take a few minutes.");
    }
    var hidden = {};
    try { hidden = JSON.parse(d.hiddenCells || "{}"); } catch (e) { console.error("mha-live: hidden cells", e); }
    markCells(hidden);
    var css = document.createElement("link");
    css.rel = "stylesheet"; css.href = here + "thebe/thebe.css";
    document.head.appendChild(css);
    started = new Promise(function (resolve, reject) {
      var s = document.createElement("script");
      s.src = here + "thebe/index.js";
      s.onerror = function () { reject(new Error("cannot load " + s.src)); };
      s.onload = function () {
        window.thebe.mountStatusWidget();
        window.thebe.bootstrap(options).then(resolve, reject);
      };
      document.head.appendChild(s);
    }).then(function (live) {
      runHiddenFirst(live.notebook);
      window.mhaLive = live;
      document.documentElement.classList.add("mha-live-ready");
      return live;
    }, function (error) {
      statusBar("Live Code could not start: " + error + ". The intro says how to run the cells in JupyterLab.");
      console.error("mha-live:", error);
      throw error;
    });
    return started;
  };
})();
