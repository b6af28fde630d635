// The console's own behaviour. Pages work without it; it only makes them smoother.
document.addEventListener("htmx:responseError", (event) => {
  const messages = document.getElementById("messages");
  if (!messages) return;
  // A refusal the server words itself (429: too many changes) brings its own messages.
  const answer = new DOMParser()
    .parseFromString(event.detail.xhr?.responseText ?? "", "text/html")
    .getElementById("messages");
  if (answer?.children.length) {
    messages.replaceChildren(...answer.children);
    return;
  }
  const alert = document.createElement("div");
  alert.className = "alert alert-danger";
  alert.setAttribute("role", "alert");
  alert.textContent = document.body.dataset.requestFailed;
  messages.replaceChildren(alert);
});

// A log that was scrolled to its end stays at its end as lines arrive.
document.addEventListener("htmx:oobBeforeSwap", (event) => {
  const log = event.detail.target;
  if (!log || log.id !== "log-text") return;
  log.dataset.follow = log.scrollTop + log.clientHeight >= log.scrollHeight - 8 ? "true" : "false";
});
document.addEventListener("htmx:oobAfterSwap", (event) => {
  const log = event.detail.target;
  if (log && log.id === "log-text" && log.dataset.follow === "true") log.scrollTop = log.scrollHeight;
});
document.addEventListener("htmx:load", (event) => {
  for (const log of event.detail.elt.querySelectorAll?.("#log-text") ?? []) log.scrollTop = log.scrollHeight;
});

// A cluster's form: only the fields of the chosen connection kind (all show without JS).
function showConnectionFields(root) {
  for (const form of root.querySelectorAll?.("form:has([data-cluster-connection])") ?? []) {
    const chosen = form.querySelector("[data-cluster-connection]:checked")?.value;
    for (const group of form.querySelectorAll("[data-connection-kind]")) {
      group.hidden = chosen !== undefined && group.dataset.connectionKind !== chosen;
    }
  }
}
document.addEventListener("change", (event) => {
  if (event.target.matches?.("[data-cluster-connection]")) showConnectionFields(document);
});
document.addEventListener("htmx:load", (event) => showConnectionFields(event.detail.elt));
document.addEventListener("DOMContentLoaded", () => showConnectionFields(document));

// A panel that reads the whole form (the job form's prediction) says nothing while the form
// is being redrawn: its fields are disabled then, so the form would look empty. The redraw
// triggers "form-refreshed", and the panel asks again with the new fields.
document.addEventListener("htmx:confirm", (event) => {
  const waitFor = event.detail.elt.dataset?.waitFor;
  if (waitFor && document.querySelector(waitFor)?.disabled) event.preventDefault();
});

// A panel that swaps itself whole (the job form's availability panel) drops a change made
// while it was asking: htmx forgets the delayed trigger of the element it replaces. So the
// number of the form's changes is noted when the panel asks, and a panel drawn from an
// answer that predates the latest change asks again.
let formChanges = 0;
const askedAt = new Map();
document.addEventListener("change", (event) => {
  if (event.target.form?.id === "job-form") formChanges += 1;
});
document.addEventListener("htmx:configRequest", (event) => {
  const target = event.detail.target;
  if (target?.dataset?.followsForm !== undefined) askedAt.set(target.id, formChanges);
});
document.addEventListener("htmx:load", (event) => {
  const panel = event.detail.elt;
  if (panel.dataset?.followsForm === undefined || !askedAt.has(panel.id)) return;
  if (askedAt.get(panel.id) !== formChanges) htmx.trigger(panel, "form-changed");
});
