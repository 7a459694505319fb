// Baton console: the little the pages need beyond HTML. No inline script anywhere (the
// Content Security Policy forbids it); this file and the vendored libraries are all there is.
(function () {
  "use strict";

  // 1. The viewer's time zone, so the server renders times in it (and names it).
  function zoneCookie() {
    var match = document.cookie.match(/(?:^|;\s*)baton_tz=([^;]*)/);
    return match ? decodeURIComponent(match[1]) : null;
  }
  var zone = null;
  try {
    zone = Intl.DateTimeFormat().resolvedOptions().timeZone || null;
  } catch (error) {
    zone = null;
  }
  if (zone && zoneCookie() !== zone) {
    document.cookie = "baton_tz=" + encodeURIComponent(zone) +
      "; path=/console; max-age=31536000; samesite=strict";
    var shown = document.body && document.body.dataset.zone;
    // Re-render once in the viewer's zone (never loop if the server does not know it).
    if (shown && shown !== zone && !sessionStorage.getItem("baton_tz_reloaded")) {
      sessionStorage.setItem("baton_tz_reloaded", "1");
      window.location.reload();
      return;
    }
  }

  // 2. Charts from the data the server put on each canvas.
  function formatter(unit) {
    if (unit === "usd") {
      return function (value) { return "$" + Number(value).toFixed(value >= 10 ? 0 : 2); };
    }
    return function (value) { return Number(value).toLocaleString(); };
  }
  function drawCharts() {
    if (typeof window.Chart === "undefined") { return; }
    document.querySelectorAll("canvas.chart[data-chart]").forEach(function (canvas) {
      if (canvas.dataset.drawn) { return; }
      var data;
      try { data = JSON.parse(canvas.dataset.chart); } catch (error) { return; }
      var format = formatter(canvas.dataset.unit);
      canvas.dataset.drawn = "1";
      new window.Chart(canvas, {
        type: "bar",
        data: data,
        options: {
          animation: false,
          responsive: true,
          maintainAspectRatio: false,
          scales: {
            x: { stacked: true },
            y: { stacked: true, beginAtZero: true, ticks: { callback: format } }
          },
          plugins: {
            legend: { position: "bottom" },
            tooltip: {
              callbacks: {
                label: function (item) { return item.dataset.label + ": " + format(item.raw); }
              }
            }
          }
        }
      });
    });
  }

  // 3. Live regions that stop updating say so, and say why.
  function liveError(text) {
    var box = document.getElementById("live-error");
    if (!box) { return; }
    box.textContent = text || "";
    box.hidden = !text;
  }
  document.addEventListener("htmx:responseError", function (event) {
    var status = event.detail && event.detail.xhr ? event.detail.xhr.status : 0;
    liveError("Live updates paused: Baton answered " + status + ". Retrying.");
  });
  document.addEventListener("htmx:sendError", function () {
    liveError("Live updates paused: Baton could not be reached. Retrying.");
  });
  document.addEventListener("htmx:afterSwap", function () { liveError(""); });

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", drawCharts);
  } else {
    drawCharts();
  }
})();
