// Study management page: copy an invitation link. Delegated, so it also works on parts htmx swapped in.
document.addEventListener("click", (event) => {
  const button = event.target.closest("[data-copy]");
  if (!button) return;
  const input = document.getElementById(button.dataset.copy);
  input.select();
  const done = () => { button.textContent = "Copied"; setTimeout(() => { button.textContent = "Copy"; }, 2000); };
  if (navigator.clipboard && window.isSecureContext) {
    navigator.clipboard.writeText(input.value).then(done, () => { document.execCommand("copy"); done(); });
  } else {
    document.execCommand("copy");  // plain-http hosts have no async clipboard
    done();
  }
});

// After htmx swaps a section in, put the keyboard on its first refused field, else on its notice,
// so that a screen reader announces what happened and the next Tab starts there.
document.addEventListener("htmx:afterSwap", (event) => {
  const section = document.getElementById(event.detail.target.id) || event.detail.target;
  const target = section.querySelector("[aria-invalid=true], .confirm button, .error, .notice");
  if (!target) return;
  if (!target.matches("input, select, textarea, button")) target.setAttribute("tabindex", "-1");
  target.focus({ preventScroll: false });
});
