// Small conveniences; every page works without them.
document.addEventListener("input", (event) => {
  // Typing in an article's editor means "edit this one".
  const area = event.target.closest("textarea[data-side]");
  if (!area) return;
  const radio = area.form && area.form.querySelector(`input[name="${area.dataset.side}_action"][value="edit"]`);
  if (radio) radio.checked = true;
});
document.addEventListener("change", (event) => {
  if (!event.target.matches("input.select-all")) return;
  const form = event.target.closest("form");
  form.querySelectorAll('input[name="ids"]').forEach((box) => { box.checked = event.target.checked; });
});
document.addEventListener("change", (event) => {
  // Selects that act at once (the knowledge-base switch); a handler here, not inline, for the CSP.
  if (event.target.matches("select[data-autosubmit]")) event.target.form.requestSubmit();
});
