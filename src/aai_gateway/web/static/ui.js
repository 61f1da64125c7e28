// Pages that show live state (pending consent requests) reload themselves every few seconds,
// unless the user is typing in a form.
(function () {
  "use strict";
  var seconds = Number(document.body.dataset.refresh || 0);
  if (!seconds) {
    return;
  }
  window.setInterval(function () {
    var active = document.activeElement;
    if (active && (active.tagName === "INPUT" || active.tagName === "SELECT")) {
      return;
    }
    window.location.reload();
  }, seconds * 1000);
})();
