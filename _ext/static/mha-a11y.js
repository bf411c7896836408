// Widget frames are <img> elements that ipywidgets draws without alt text. Each frame of the
// book's sweeps is a box holding the picture and a caption that says what the picture shows;
// copy that caption into the picture's alt text, so a screen reader reads it too. Sliders get a
// name and their stop as text (see nameSlider).
(function () {
  "use strict";

  function describe(img) {
    if ((img.getAttribute("alt") || "").trim()) return;
    var box = img.closest(".widget-vbox, .widget-box");
    var caption = box ? box.querySelector(".widget-html, .widget-label") : null;
    var text = caption ? caption.textContent.replace(/\s+/g, " ").trim() : "";
    if (text) img.setAttribute("alt", text);
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
    var slider = handle.closest(".widget-slider, .widget-hslider, .widget-vslider");
    var readout = slider ? slider.querySelector(".widget-readout") : null;
    return readout ? readout.textContent.trim() : "";
  }

  function nameSlider(handle) {
    var note = sliderNote(handle);
    var slider = handle.closest(".widget-slider, .widget-hslider, .widget-vslider");
    var label = slider ? slider.querySelector(".widget-label") : null;
    var name = (note && note.getAttribute("data-name")) || (label ? label.textContent.trim() : "");
    if (name && handle.getAttribute("aria-label") !== name) handle.setAttribute("aria-label", name);
    var text = sliderText(handle);
    if (text && handle.getAttribute("aria-valuetext") !== text) handle.setAttribute("aria-valuetext", text);
  }

  function watchSlider(handle) {
    if (handle.mhaWatched) return;
    handle.mhaWatched = true;
    nameSlider(handle);
    new MutationObserver(function () { nameSlider(handle); })
      .observe(handle, { attributes: true, attributeFilter: ["aria-valuenow", "aria-valuetext"] });
  }

  function scan(node) {
    if (node.nodeType !== 1) return;
    if (node.tagName === "IMG") {
      if (node.closest(".jupyter-widgets")) describe(node);
      return;
    }
    node.querySelectorAll(".jupyter-widgets img").forEach(describe);
    if (node.matches(".noUi-handle[role=slider]")) watchSlider(node);
    node.querySelectorAll(".jupyter-widgets .noUi-handle[role=slider]").forEach(watchSlider);
  }

  function start() {
    scan(document.body);
    new MutationObserver(function (records) {
      records.forEach(function (record) { record.addedNodes.forEach(scan); });
    }).observe(document.body, { childList: true, subtree: true });
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
