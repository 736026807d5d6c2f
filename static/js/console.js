// Small conveniences; every page works without them.
document.addEventListener("input", (event) => {
  // Typing in an article's editor means "edit this one".
  const area = event.target.closest("textarea[data-side]");
  if (!area) return;
  const radio = area.form && area.form.querySelector(`input[name="${area.dataset.side}_action"][value="edit"]`);
  if (radio) radio.checked = true;
});
document.addEventListener("change", (event) => {
  if (event.target.matches("select[data-autosubmit]")) {
    event.target.form.requestSubmit();
    return;
  }
  if (!event.target.matches("input.select-all")) return;
  const form = event.target.closest("form");
  form.querySelectorAll('input[name="ids"]').forEach((box) => { box.checked = event.target.checked; });
});
document.addEventListener("change", (event) => {
  // A source's location says what it holds for the chosen kind (URLs, a sitemap, a folder, nothing for uploads).
  if (!event.target.matches('select[name="kind"]')) return;
  const location = event.target.form && event.target.form.querySelector("textarea[data-placeholders]");
  if (!location) return;
  const placeholders = JSON.parse(location.dataset.placeholders);
  location.placeholder = placeholders[event.target.value] || "";
});
document.addEventListener("change", (event) => {
  // Selects that act at once (the knowledge-base switch); a handler here, not inline, for the CSP.
  if (event.target.matches("select[data-autosubmit]")) event.target.form.requestSubmit();
});

// Fields with a length limit (article titles) count as you type and say when the text is too long;
// the server refuses it with the same words, nothing is cut silently.
document.addEventListener("input", (event) => {
  const field = event.target;
  if (!field.matches || !field.matches("[data-max-chars]")) return;
  const note = document.querySelector(`[data-count-for="${field.id}"]`);
  if (!note) return;
  const limit = Number(field.dataset.maxChars);
  const length = field.value.length;
  note.textContent = length > limit
    ? `${length} characters: at most ${limit} fit. Shorten it.`
    : `${length} / ${limit} characters.`;
  note.classList.toggle("error", length > limit);
});

// Plain (non-HTMX) forms: disable their buttons once submitted, so a slow answer is not sent twice.
document.addEventListener("submit", (event) => {
  const form = event.target;
  if (form.matches("[hx-post], [hx-get]") || form.method === "dialog") return;
  setTimeout(() => form.querySelectorAll("button[type=submit]").forEach((b) => { b.disabled = true; }), 0);
});

// Long requests (the playground's decoding) count the seconds they have been working, so a minute of
// model loading never looks like nothing happening.
document.addEventListener("htmx:beforeRequest", (event) => {
  document.querySelectorAll("[data-elapsed-for]").forEach((counter) => {
    if (!event.detail.elt.matches(counter.dataset.elapsedFor)) return;
    const started = Date.now();
    clearInterval(counter.timer);
    counter.textContent = "0 s";
    counter.timer = setInterval(() => { counter.textContent = `${Math.round((Date.now() - started) / 1000)} s`; }, 1000);
  });
});
document.addEventListener("htmx:afterRequest", () => {
  document.querySelectorAll("[data-elapsed-for]").forEach((counter) => { clearInterval(counter.timer); });
});

// A failed HTMX request must not fail silently.
function showToast(text) {
  const toast = document.getElementById("toast");
  if (!toast) return;
  toast.textContent = text;
  toast.hidden = false;
  clearTimeout(showToast.timer);
  showToast.timer = setTimeout(() => { toast.hidden = true; }, 8000);
}
document.addEventListener("htmx:responseError", (event) => {
  const status = event.detail.xhr.status;
  const why = status === 403 ? "You do not have the role this needs."
    : status === 404 ? "Not found: it may have been removed, or belongs to another knowledge base."
    : `The server answered ${status}; nothing half-done was kept. Reload and try again.`;
  showToast(why);
});
document.addEventListener("htmx:sendError", () => showToast("No answer from the server: check the connection and try again."));

// Keyboard triage: j/k move, o/Enter open, e edit, d dismiss, ? help. Never while typing in a field.
function queueRows() { return Array.from(document.querySelectorAll("tr.conflict-row")); }

function moveSelection(step) {
  const rows = queueRows();
  if (!rows.length) return false;
  const current = rows.findIndex((row) => row.classList.contains("kb-selected"));
  const next = current < 0 ? (step > 0 ? 0 : rows.length - 1) : Math.min(Math.max(current + step, 0), rows.length - 1);
  rows.forEach((row) => { row.classList.remove("kb-selected"); row.removeAttribute("aria-selected"); });
  rows[next].classList.add("kb-selected");
  rows[next].setAttribute("aria-selected", "true");
  rows[next].scrollIntoView({ block: "nearest" });
  return true;
}

function follow(selector) {
  const link = document.querySelector(selector);
  if (link) { link.click(); return true; }
  return false;
}

function focusField(selector) {
  const field = document.querySelector(selector);
  if (!field) return false;
  field.scrollIntoView({ block: "center" });
  field.focus();
  return true;
}

document.addEventListener("keydown", (event) => {
  const target = event.target;
  const typing = target.closest && target.closest("input, textarea, select, [contenteditable]");
  if (typing) {
    if ((event.ctrlKey || event.metaKey) && event.key === "Enter" && target.form) {
      event.preventDefault();
      target.form.requestSubmit();
    } else if (event.key === "Escape") {
      target.blur();
    }
    return;
  }
  if (event.ctrlKey || event.metaKey || event.altKey) return;
  const dialog = document.getElementById("shortcuts");
  let handled = false;
  switch (event.key) {
    case "j":
      handled = moveSelection(1) || follow('[data-shortcut="next"]');
      break;
    case "k":
      handled = moveSelection(-1) || follow('[data-shortcut="back"]');
      break;
    case "o":
      handled = follow("tr.conflict-row.kb-selected a.pair");
      break;
    case "Enter":  // only when no link or button has the focus (those follow their own Enter)
      handled = target === document.body && follow("tr.conflict-row.kb-selected a.pair");
      break;
    case "e":
      handled = focusField("#resolve-form textarea");
      break;
    case "d":
      handled = focusField(".dismiss-form textarea, .dismiss-form input[name=reason], #bulk input[name=reason]");
      break;
    case "?":
      if (dialog) { dialog.open ? dialog.close() : dialog.showModal(); handled = true; }
      break;
  }
  if (handled) event.preventDefault();
});
