// The header's hamburger ("Toggle primary sidebar") and "Contents" ("Toggle secondary sidebar")
// buttons. pydata-sphinx-theme 0.17 adds a second, hidden copy of each button to its own navbar
// (#pst-header), before sphinx-book-theme's visible ones in the article header; both themes bind
// their click handlers with document.querySelector(".primary-toggle"), i.e. to the hidden copy,
// so the buttons a reader sees did nothing (pydata-sphinx-theme#2451, sphinx-book-theme#988).
// Forward a click on a visible button to the bound one: on a wide screen sphinx-book-theme then
// folds the sidebar away, on a narrow one pydata-sphinx-theme opens it as a drawer. A button that
// already is the bound one (the bug fixed upstream) is left alone. Remove this file when the
// theme pins move to a pair that binds the visible buttons (the browser test says so).
(function () {
  "use strict";

  function forward(kind) {
    var buttons = document.querySelectorAll("." + kind);
    var bound = buttons[0];
    for (var i = 1; i < buttons.length; i++) {
      buttons[i].addEventListener("click", function (event) {
        event.preventDefault();
        event.stopImmediatePropagation();
        bound.click();
      }, true);
    }
  }

  // The theme names its search buttons "Search" while they show "Search Ctrl+K", and its colour
  // mode button "Color mode" while it shows the mode's icon titled "Light", "Dark" or "System
  // Settings": a spoken command of what is seen ("click Search Ctrl K") would miss them (WCAG
  // 2.5.3, axe's label-content-name-mismatch). Name each after what it shows.
  function nameModeButton(button) {
    var shown = Array.prototype.filter.call(button.querySelectorAll("svg title, i[title]"), function (t) {
      var icon = t.tagName === "title" ? t.parentNode : t;
      return icon.getBoundingClientRect().width > 0;
    })[0];
    var mode = shown ? (shown.textContent || shown.getAttribute("title") || "").trim() : "";
    var name = mode ? "Color mode: " + mode : "Color mode";
    if (button.getAttribute("aria-label") !== name) button.setAttribute("aria-label", name);
  }

  function nameHeaderButtons() {
    document.querySelectorAll(".search-button-field[aria-label]").forEach(function (button) {
      if (button.textContent.trim()) button.removeAttribute("aria-label");
    });
    document.querySelectorAll(".theme-switch-button").forEach(function (button) {
      nameModeButton(button);
      new MutationObserver(function () { nameModeButton(button); })
        .observe(button, { subtree: true, childList: true, attributes: true, attributeFilter: ["style", "class"] });
      button.addEventListener("click", function () { setTimeout(function () { nameModeButton(button); }, 0); });
    });
    new MutationObserver(function () { document.querySelectorAll(".theme-switch-button").forEach(nameModeButton); })
      .observe(document.documentElement, { attributes: true, attributeFilter: ["data-mode", "data-theme"] });
  }

  function start() {
    forward("primary-toggle");
    forward("secondary-toggle");
    nameHeaderButtons();
    window.addEventListener("load", function () {  // fontawesome.js turns the icons into SVGs
      document.querySelectorAll(".theme-switch-button").forEach(nameModeButton);
    });
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
