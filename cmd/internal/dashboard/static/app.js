// The sandbox dashboard: refreshes the live sections every second and sends
// the buttons' actions to the dashboard's own endpoints (same origin, JSON).
"use strict";
(function () {
  const flash = document.getElementById("flash");
  const liveDot = document.getElementById("live-dot");
  const liveText = document.getElementById("live-text");
  let sent = 0;    // refreshes started
  let applied = 0; // newest refresh applied

  // editing reports whether the user is in a control inside el, whose
  // value a refresh would reset.
  function editing(el) {
    const a = document.activeElement;
    return a && el.contains(a) && (a.tagName === "SELECT" || a.tagName === "INPUT");
  }

  function setLive(ok) {
    liveDot.className = ok ? "dot on" : "dot off";
    liveText.textContent = ok ? "live" : "server not answering";
  }

  async function refresh() {
    const n = ++sent;
    let html;
    try {
      const r = await fetch("dashboard/panel", { cache: "no-store" });
      if (!r.ok) throw new Error("HTTP " + r.status);
      html = await r.text();
      setLive(true);
    } catch (e) {
      setLive(false);
      return;
    }
    if (n < applied) return; // a newer answer is already on screen
    applied = n;
    const doc = new DOMParser().parseFromString(html, "text/html");
    for (const fresh of doc.querySelectorAll("[data-live]")) {
      const old = document.getElementById(fresh.id);
      if (old && old.outerHTML !== fresh.outerHTML && !editing(old)) {
        old.replaceWith(document.importNode(fresh, true));
      }
    }
  }

  function show(msg, isError) {
    flash.textContent = msg;
    flash.className = isError ? "flash show error" : "flash show ok";
  }

  async function act(path, body, button) {
    if (button) button.disabled = true;
    try {
      const r = await fetch(path, {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify(body),
      });
      const j = await r.json().catch(() => ({}));
      if (r.ok) show(j.message || "done", false);
      else show(j.error || "HTTP " + r.status, true);
    } catch (e) {
      show("the fake server did not answer: " + e.message, true);
    }
    if (button) button.disabled = false;
    if (document.activeElement && document.activeElement.blur) document.activeElement.blur();
    await refresh();
  }

  const enc = encodeURIComponent;
  document.addEventListener("click", (ev) => {
    const b = ev.target.closest("button[data-action]");
    if (!b) return;
    ev.preventDefault();
    const id = b.dataset.id;
    switch (b.dataset.action) {
      case "pay":
        act("dashboard/payments/" + enc(id) + "/pay", { how: b.dataset.how }, b);
        break;
      case "expire":
        act("dashboard/payments/" + enc(id) + "/expire", {}, b);
        break;
      case "payout-status": {
        const sel = b.parentElement.querySelector("select");
        act("dashboard/payouts/" + enc(id) + "/status", { status: sel.value }, b);
        break;
      }
      case "clear-faults":
        act("dashboard/faults/clear", {}, b);
        break;
    }
  });

  document.getElementById("clock-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    const f = ev.target;
    act("dashboard/clock/advance", { duration: f.duration.value.trim() }, f.querySelector("button"));
  });

  document.getElementById("fault-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    const f = ev.target;
    act("dashboard/faults", {
      route: f.route.value,
      preset: f.preset.value,
      times: parseInt(f.times.value, 10) || 0,
    }, f.querySelector("button[type=submit]"));
  });

  setInterval(refresh, 1000);
})();
