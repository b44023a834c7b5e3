// farm view: ← and → move between the steps of a trajectory (a unit page's steps, a side-by-side page's rows).
// The only script of the viewer; every page works without it (each step links to the next and previous one).
"use strict";
(function () {
  function steps() { return Array.prototype.slice.call(document.querySelectorAll("[data-nav-step]")); }
  function current(list) {
    var id = decodeURIComponent(location.hash.slice(1));
    for (var i = 0; i < list.length; i++) { if (list[i].id === id) { return i; } }
    // No step named in the address: the last one whose top has scrolled into view (before the first: -1).
    var at = -1;
    for (var j = 0; j < list.length; j++) { if (list[j].getBoundingClientRect().top <= 80) { at = j; } }
    return at;
  }
  document.addEventListener("keydown", function (event) {
    if (event.altKey || event.ctrlKey || event.metaKey || event.shiftKey || event.defaultPrevented) { return; }
    if (event.key !== "ArrowLeft" && event.key !== "ArrowRight") { return; }
    var target = event.target;
    if (target && target.closest && target.closest("input, select, textarea, [contenteditable]")) { return; }
    var list = steps();
    if (!list.length) { return; }
    var i = current(list);
    var next = event.key === "ArrowRight" ? Math.min(i + 1, list.length - 1) : Math.max(i - 1, 0);
    if (next === i && i >= 0) { return; }
    event.preventDefault();
    location.hash = list[next].id;
  });
})();
