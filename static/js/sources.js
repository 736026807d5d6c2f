// Upload progress for the sources page; without it the upload still works, just without the bar.
document.addEventListener("htmx:xhr:progress", (event) => {
  const form = event.target.closest && event.target.closest("form[data-upload-progress]");
  if (!form || !event.detail.total) return;
  const percent = Math.round((100 * event.detail.loaded) / event.detail.total);
  const bar = form.querySelector("progress.upload");
  bar.hidden = false;
  bar.value = percent;
  form.querySelector(".upload-label").textContent = `uploaded ${percent}%`;
});
