/* A region that scrolls (a wide table on a phone, a long context under its height cap) must be reachable from the keyboard
 * (WCAG 2.1.1): such a region gets tabindex=0 and a name from its table's caption or the nearest
 * heading; a region that fits loses them again. Runs on load, on resize and after htmx swaps. */
(function () {
  "use strict";
  const SELECTOR = ".table-wrap, main table, main pre, .context-body";

  function nameFor(el) {
    const cap = el.querySelector("caption");
    if (cap && cap.textContent.trim()) return cap.textContent.trim();
    let node = el;
    while (node && node !== document.body) {
      let prev = node.previousElementSibling;
      while (prev) {
        if (/^H[1-6]$/.test(prev.tagName)) return prev.textContent.trim();
        const inner = prev.querySelector && prev.querySelector("h1, h2, h3, h4, h5, h6");
        if (inner) return inner.textContent.trim();
        prev = prev.previousElementSibling;
      }
      node = node.parentElement;
    }
    return "";
  }

  function update() {
    document.querySelectorAll(SELECTOR).forEach((el) => {
      const style = getComputedStyle(el);
      const scrolls = (el.scrollWidth > el.clientWidth + 1 && style.overflowX !== "visible")
        || (el.scrollHeight > el.clientHeight + 1 && /auto|scroll/.test(style.overflowY));
      if (scrolls && !el.hasAttribute("tabindex")) {
        el.setAttribute("tabindex", "0");
        el.dataset.scrollRegion = "1";
        const name = nameFor(el);
        if (name && el.tagName !== "TABLE" && el.tagName !== "PRE" && !el.hasAttribute("role")) {
          el.setAttribute("role", "region");
          el.setAttribute("aria-label", name);
        }
      } else if (!scrolls && el.dataset.scrollRegion) {
        el.removeAttribute("tabindex");
        delete el.dataset.scrollRegion;
      }
    });
  }

  let timer = null;
  const later = () => { clearTimeout(timer); timer = setTimeout(update, 100); };
  document.addEventListener("DOMContentLoaded", update);
  window.addEventListener("resize", later);
  document.addEventListener("htmx:afterSettle", later);
  if (document.readyState !== "loading") update();
})();
