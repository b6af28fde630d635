// The console's own behaviour. Pages work without it; it only makes them smoother.
document.addEventListener("htmx:responseError", () => {
  const messages = document.getElementById("messages");
  if (!messages) return;
  const alert = document.createElement("div");
  alert.className = "alert alert-danger";
  alert.setAttribute("role", "alert");
  alert.textContent = document.body.dataset.requestFailed;
  messages.replaceChildren(alert);
});
