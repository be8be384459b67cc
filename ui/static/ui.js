// Live updates: when Warden reports a change, offer a reload (a reload
// keeps what the operator is reading and ticking in place until asked).
(function () {
  var live = document.getElementById("live");
  if (!live || !window.EventSource || !document.querySelector("input[name=csrf]")) return;
  var es = new EventSource("/ui/events");
  var show = function () { live.hidden = false; };
  // Open means subscribed: what happens from now on is heard.
  es.onopen = function () { document.body.dataset.live = "on"; };
  ["server", "tools", "writes", "config", "auth"].forEach(function (t) { es.addEventListener(t, show); });
  window.addEventListener("pagehide", function () { es.close(); });
})();
