// Episode page: the right and left arrow keys (or j and k) step to the next and previous turn. The current step is
// the one the address names while it is on screen, otherwise the last one scrolled past the top third of the window.
(function () {
  var steps = Array.prototype.slice.call(document.querySelectorAll("section.step"));
  function onScreen(el) { var r = el.getBoundingClientRect(); return r.bottom > 0 && r.top < window.innerHeight; }
  function current() {
    var named = document.getElementById(location.hash.slice(1));  // our ids need no decoding
    var i = steps.indexOf(named);
    if (i >= 0 && onScreen(named)) { return i; }
    i = -1;
    steps.forEach(function (s, k) { if (s.getBoundingClientRect().top <= window.innerHeight / 3) { i = k; } });
    return i;
  }
  document.addEventListener("keydown", function (ev) {
    if (ev.altKey || ev.ctrlKey || ev.metaKey || ev.shiftKey) { return; }
    var t = ev.target;
    if (t && (t.tagName === "INPUT" || t.tagName === "TEXTAREA" || t.isContentEditable)) { return; }
    var i = current(), j;
    if (ev.key === "ArrowRight" || ev.key === "j") { j = Math.min(i + 1, steps.length - 1); }
    else if (ev.key === "ArrowLeft" || ev.key === "k") { j = Math.max(i - 1, 0); }
    else { return; }
    ev.preventDefault();
    if (j >= 0) { location.hash = steps[j].id; steps[j].scrollIntoView(); }
  });
})();
