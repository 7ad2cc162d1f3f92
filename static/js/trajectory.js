// Keyboard navigation between the steps of a trajectory (annotation/trajectory_html.py): j / ArrowDown
// for the next step, k / ArrowUp for the previous, Home / End, while focus is on a step. j and k also
// work from anywhere inside a trajectory. One step at a time is in the tab order (roving tabindex).
(function () {
  "use strict";
  function steps(list) { return Array.prototype.slice.call(list.querySelectorAll(":scope > li.step")); }
  function focusStep(all, i) {
    if (i < 0 || i >= all.length) return;
    all.forEach(function (s, n) { s.tabIndex = n === i ? 0 : -1; });
    all[i].focus();
    all[i].scrollIntoView({ block: "nearest" });
  }
  document.addEventListener("keydown", function (e) {
    if (e.ctrlKey || e.metaKey || e.altKey || e.isComposing) return;
    var t = e.target;
    if (!t || !t.closest) return;
    var list = t.closest(".traj-steps");
    if (!list) return;
    var onStep = t.matches("li.step");
    var k = e.key;
    var moves = { j: 1, k: -1 };
    if (onStep) { moves.ArrowDown = 1; moves.ArrowUp = -1; }
    var all = steps(list);
    var step = t.closest("li.step");
    var i = all.indexOf(step);
    if (onStep && (k === "Home" || k === "End")) {
      focusStep(all, k === "Home" ? 0 : all.length - 1);
    } else if (Object.prototype.hasOwnProperty.call(moves, k)) {
      focusStep(all, Math.max(0, Math.min(all.length - 1, i + moves[k])));
    } else {
      return;
    }
    // The workspace's own shortcuts (arrows move between criteria) stay out of a step's way.
    e.preventDefault();
    e.stopPropagation();
  }, true);
})();
