// Widget frames are <img> elements that ipywidgets draws without alt text. Each frame of the
// book's sweeps is a box holding the picture and a caption that says what the picture shows;
// copy that caption into the picture's alt text, so a screen reader reads it too.
(function () {
  "use strict";

  function describe(img) {
    if ((img.getAttribute("alt") || "").trim()) return;
    var box = img.closest(".widget-vbox, .widget-box");
    var caption = box ? box.querySelector(".widget-html, .widget-label") : null;
    var text = caption ? caption.textContent.replace(/\s+/g, " ").trim() : "";
    if (text) img.setAttribute("alt", text);
  }

  function scan(node) {
    if (node.nodeType !== 1) return;
    if (node.tagName === "IMG") {
      if (node.closest(".jupyter-widgets")) describe(node);
      return;
    }
    node.querySelectorAll(".jupyter-widgets img").forEach(describe);
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
