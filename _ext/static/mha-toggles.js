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

  function start() {
    forward("primary-toggle");
    forward("secondary-toggle");
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
