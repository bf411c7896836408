// The widgets on the static page, for screen readers and the keyboard (ipywidgets 8 draws them):
// * a frame (an <img> without alt text, with its caption next to it) gets a short alt text that
//   points to the caption, which is read once, as text; when the picture changes, the new caption
//   is announced in a polite live region of the widget (announce);
// * a slider gets a name and its stop as text (nameSlider), in words ("d k", not "d_k");
// * a slider's readout is plain text: ipywidgets makes it an editable tab stop that accepts any
//   text and does nothing with it on a page without a kernel (readOnly). The book's sliders hide
//   it and show a read-only readout beside them (mha.widgets.frames.readout_row), which also holds
//   in JupyterLab, where this script does not run; this stays for any other slider.
// The book's pickers are drop-down lists (mha.widgets.browser, mha.widgets.lookup): a <select> named
// by its <label>, which a screen reader hears as "layer, 3" with no script, here and in JupyterLab.
// ipywidgets' ToggleButtons say neither their group nor which one is pressed; do not use them.
(function () {
  "use strict";

  var FRAME_ALT = "Picture described by the caption below.";

  function squash(text) {
    return (text || "").replace(/\s+/g, " ").trim();
  }

  // "d_k" is read "d underscore k": say the subscript as a word.
  function spoken(text) {
    return text.replace(/([A-Za-z])_([A-Za-z0-9]+)/g, "$1 $2");
  }

  function captionOf(img) {
    var figure = img.closest("figure");
    if (figure && figure.querySelector("figcaption")) return figure.querySelector("figcaption");
    var box = img.closest(".widget-vbox, .widget-box");
    return box ? box.querySelector(".widget-html, .widget-label") : null;
  }

  function describe(img) {
    var caption = captionOf(img);
    var text = caption ? squash(caption.textContent) : "";
    var alt = squash(img.getAttribute("alt"));
    if (text && (!alt || alt === text)) img.setAttribute("alt", FRAME_ALT);
    announce(img, text);
  }

  // One polite live region per widget output: the caption of a picture that has just been shown.
  function announce(img, text) {
    var area = img.closest(".widget-subarea");
    if (!area || !text) return;
    var region = area.querySelector(":scope > .mha-live");
    if (!region) {
      region = document.createElement("div");
      region.className = "mha-live visually-hidden";
      region.setAttribute("aria-live", "polite");
      region.setAttribute("aria-atomic", "true");
      area.appendChild(region);
      region.mhaLast = text;  // the first picture is read with the page, not announced
      return;
    }
    if (region.mhaLast === text || !img.checkVisibility()) return;
    region.mhaLast = text;
    region.textContent = text;
  }

  function readOnly(readout) {
    if (readout.getAttribute("contenteditable") !== "false") {
      readout.setAttribute("contenteditable", "false");
    }
    if (readout.mhaWatched) return;
    readout.mhaWatched = true;
    // ipywidgets sets it editable again on every update of the slider
    new MutationObserver(function () { readOnly(readout); })
      .observe(readout, { attributes: true, attributeFilter: ["contenteditable"] });
  }

  // A slider's handle (noUiSlider, drawn by ipywidgets) has no name, and its aria-valuetext is
  // the index of the stop ("1" when the readout says "2 (d_k = 6)"). Name it after the slider's
  // label, and say the stop as text: from the sweep's note (mha.widgets.frames.slider_text_html) when
  // there is one, else the slider's readout.
  function sliderNote(handle) {
    var box = handle.closest(".mha-sweep");
    return box ? box.querySelector(".mha-slider-text") : null;
  }

  function sliderText(handle) {
    var note = sliderNote(handle);
    var index = Math.round(parseFloat(handle.getAttribute("aria-valuenow")));
    if (note) {
      try {
        var values = JSON.parse(note.getAttribute("data-values") || "[]");
        if (index >= 0 && index < values.length) return values[index];
      } catch (err) { /* fall back to the readout */ }
    }
    // the read-only readout beside the slider (mha.widgets.frames.readout_row: a Stack, which holds
    // only the stop shown), else ipywidgets' own. (No checkVisibility here: it lays the page out.)
    var row = handle.closest(".mha-slider-row");
    var shown = row ? row.querySelector(".mha-readout .widget-html-content") : null;
    var slider = handle.closest(".widget-slider, .widget-hslider, .widget-vslider");
    var readout = shown || (slider ? slider.querySelector(".widget-readout") : null);
    return readout ? readout.textContent.trim() : "";
  }

  function nameSlider(handle) {
    var note = sliderNote(handle);
    var slider = handle.closest(".widget-slider, .widget-hslider, .widget-vslider");
    var label = slider ? slider.querySelector(".widget-label") : null;
    var name = (note && note.getAttribute("data-name")) || (label ? label.textContent.trim() : "");
    name = spoken(name);
    if (name && handle.getAttribute("aria-label") !== name) handle.setAttribute("aria-label", name);
    var text = spoken(sliderText(handle));
    if (text && handle.getAttribute("aria-valuetext") !== text) handle.setAttribute("aria-valuetext", text);
  }

  function watchSlider(handle) {
    if (handle.mhaWatched) return;
    handle.mhaWatched = true;
    nameSlider(handle);
    new MutationObserver(function () { nameSlider(handle); })
      .observe(handle, { attributes: true, attributeFilter: ["aria-valuenow", "aria-valuetext"] });
    // the readout beside the slider follows it a moment later (a Stack linked in the browser)
    var row = handle.closest(".mha-slider-row");
    if (row) {
      new MutationObserver(function () { nameSlider(handle); })
        .observe(row, { childList: true, subtree: true, characterData: true });
    }
  }

  function scan(node) {
    // (MathJax adds thousands of nodes as it typesets: none of them is a widget)
    if (node.nodeType !== 1 || node.tagName.lastIndexOf("MJX", 0) === 0) return;
    if (node.tagName === "IMG") {
      if (node.closest(".jupyter-widgets")) describe(node);
      return;
    }
    node.querySelectorAll(".jupyter-widgets img").forEach(describe);
    if (node.matches(".noUi-handle[role=slider]")) watchSlider(node);
    node.querySelectorAll(".jupyter-widgets .noUi-handle[role=slider]").forEach(watchSlider);
    if (node.matches(".jupyter-widgets .widget-readout")) readOnly(node);
    node.querySelectorAll(".jupyter-widgets .widget-readout").forEach(readOnly);
  }

  // The page changes in bursts: the widget manager builds each widget node by node, and MathJax
  // replaces hundreds of formulas. Scanning each added node cost up to 1.6 s on chapter 12 with the
  // CPU slowed 4x; instead, scan the page once per frame in which something other than a formula
  // was added (every step above is idempotent).
  var queued = false;
  function queue() {
    if (queued) return;
    queued = true;
    window.requestAnimationFrame(function () { queued = false; scan(document.body); });
  }

  function start() {
    scan(document.body);
    new MutationObserver(function (records) {
      for (var i = 0; i < records.length; i++) {
        var nodes = records[i].addedNodes;
        for (var j = 0; j < nodes.length; j++) {
          var node = nodes[j];
          if (node.nodeType === 1 && node.tagName.lastIndexOf("MJX", 0) !== 0) { queue(); return; }
        }
      }
    }).observe(document.body, { childList: true, subtree: true });
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
