/* Form behaviour that used to sit in inline handlers, which the Content-Security-Policy forbids (no inline
 * script): a form with data-confirm asks before it is sent; a form with data-no-submit is never sent (the
 * workspace's preview for researchers). Capture phase, so that it runs before htmx's own submit listener. */
(function () {
  "use strict";
  document.addEventListener("submit", (e) => {
    const form = e.target;
    if (!(form instanceof HTMLFormElement)) return;
    if (form.hasAttribute("data-no-submit") || (form.dataset.confirm && !window.confirm(form.dataset.confirm))) {
      e.preventDefault();
      e.stopImmediatePropagation();
    }
  }, true);
})();
