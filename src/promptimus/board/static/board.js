// The board's only script: asks before a destructive form is sent, and keeps a live page
// (the runs list, the approvals) up to date by fetching it again every few seconds.
"use strict";

document.addEventListener("submit", (event) => {
  const form = event.target;
  const question = form.getAttribute("data-confirm");
  if (question && !window.confirm(question)) {
    event.preventDefault();
  }
});

function refresh() {
  if (document.hidden) {
    return;
  }
  fetch(window.location.href, { headers: { "X-Board-Refresh": "1" } })
    .then((response) => (response.ok ? response.text() : null))
    .then((text) => {
      if (text === null) {
        return;
      }
      const fresh = new DOMParser().parseFromString(text, "text/html");
      for (const id of ["runs", "live"]) {
        const now = document.getElementById(id);
        const next = fresh.getElementById(id);
        if (now && next && now.innerHTML !== next.innerHTML) {
          now.innerHTML = next.innerHTML;
        }
      }
    })
    .catch(() => {});
}

if (document.body.dataset.live === "1") {
  window.setInterval(refresh, 3000);
}
