// keelpay sandbox console: plain JavaScript, no build step. The secret key
// lives only in the variable below, for as long as the page is open.
"use strict";

(function () {
  let secretKey = "";
  let selectedEvent = "";
  let timer = 0;
  const $ = (id) => document.getElementById(id);

  // api makes a request with the store's secret key and returns the
  // decoded answer; an error answer throws with its message and code.
  async function api(method, path, body) {
    const init = { method, headers: { Authorization: "Bearer " + secretKey } };
    if (body !== undefined) {
      init.headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    const res = await fetch(path, init);
    let data = null;
    try { data = await res.json(); } catch (e) { data = null; }
    if (!res.ok) {
      const err = (data && data.error) || {};
      const detail = err.details && err.details.code ? " (" + err.details.code + ")" : "";
      throw new Error((err.message || "HTTP " + res.status) + detail);
    }
    return data;
  }

  function say(id, text, bad) {
    const el = $(id);
    el.textContent = text;
    el.style.color = bad ? "var(--bad)" : "";
  }

  function cell(tr, text, cls) {
    const td = document.createElement("td");
    if (text instanceof Node) td.appendChild(text);
    else td.textContent = text == null ? "–" : String(text);
    if (cls) td.className = cls;
    tr.appendChild(td);
    return td;
  }

  function badge(status) {
    const s = document.createElement("span");
    s.className = "badge " + status;
    s.textContent = status;
    return s;
  }

  function code(text) {
    const c = document.createElement("code");
    c.textContent = text;
    return c;
  }

  function time(iso) {
    return iso ? iso.replace("T", " ").replace("Z", " UTC") : "–";
  }

  function money(amount, currency) {
    return (amount / 100).toFixed(2) + " " + currency;
  }

  function fill(tbody, rows, columns, render) {
    tbody.replaceChildren();
    if (rows.length === 0) {
      const tr = document.createElement("tr");
      const td = cell(tr, "Nothing yet.", "empty");
      td.colSpan = columns;
      tbody.appendChild(tr);
      return;
    }
    for (const row of rows) tbody.appendChild(render(row));
  }

  function button(label, title, onClick) {
    const b = document.createElement("button");
    b.type = "button";
    b.className = "secondary";
    b.textContent = label;
    b.setAttribute("aria-label", title);
    b.addEventListener("click", onClick);
    return b;
  }

  // refresh reads what the console shows. Refunds have no list of their
  // own: they are read from the refund events, the latest state first.
  async function refresh() {
    if (!secretKey) return;
    try {
      const [evs, intents, clock] = await Promise.all([
        api("GET", "/v1/events?limit=25"),
        api("GET", "/v1/payment_intents?limit=10"),
        fetch("/sandbox/clock").then((r) => r.json()),
      ]);
      renderEvents(evs.data);
      renderIntents(intents.data);
      renderRefunds(evs.data);
      $("clock-now").textContent = time(clock.now);
      $("clock-now").setAttribute("datetime", clock.now);
      $("clock-offset").textContent = String(clock.offset_seconds);
      if (selectedEvent) await renderAttempts(selectedEvent);
    } catch (e) {
      say("status", "Could not refresh: " + e.message, true);
    }
  }

  function renderEvents(events) {
    fill($("events").tBodies[0], events, 8, (e) => {
      const d = e.delivery;
      const tr = document.createElement("tr");
      tr.dataset.eventId = e.id;
      tr.dataset.delivery = d.status;
      tr.dataset.attempts = String(d.attempts);
      if (e.id === selectedEvent) tr.className = "selected";
      cell(tr, code(e.id));
      cell(tr, e.type);
      cell(tr, time(e.created_at));
      cell(tr, badge(d.status));
      cell(tr, d.attempts);
      cell(tr, d.last_failure ? d.last_failure + (d.last_status_code ? " " + d.last_status_code : "") : d.last_status_code);
      cell(tr, time(d.next_attempt_at));
      const actions = cell(tr, "", "actions");
      actions.appendChild(button("Attempts", "Show the attempts of " + e.id, () => {
        selectedEvent = e.id;
        renderAttempts(e.id);
        refresh();
      }));
      actions.appendChild(button("Redeliver", "Redeliver " + e.id, async () => {
        try {
          await api("POST", "/v1/events/" + e.id + "/redeliver");
          say("status", "Queued a new delivery of " + e.id + ".");
          refresh();
        } catch (err) {
          say("status", "Redeliver failed: " + err.message, true);
        }
      }));
      return tr;
    });
  }

  async function renderAttempts(id) {
    const list = await api("GET", "/v1/events/" + id + "/attempts?limit=50");
    $("attempts-panel").hidden = false;
    $("attempts-event").textContent = id;
    fill($("attempts").tBodies[0], list.data, 5, (a) => {
      const tr = document.createElement("tr");
      tr.dataset.failure = a.failure || "none";
      cell(tr, time(a.started_at));
      cell(tr, a.duration_ms + " ms");
      cell(tr, a.status_code);
      cell(tr, a.failure ? badge(a.failure) : badge("succeeded"));
      const pre = document.createElement("pre");
      pre.className = "body";
      pre.textContent = a.response_body || "";
      cell(tr, pre);
      return tr;
    });
  }

  function renderIntents(intents) {
    fill($("intents").tBodies[0], intents, 4, (pi) => {
      const tr = document.createElement("tr");
      tr.dataset.intentId = pi.id;
      cell(tr, code(pi.id));
      cell(tr, money(pi.amount, pi.currency));
      cell(tr, badge(pi.status));
      cell(tr, time(pi.created_at));
      return tr;
    });
  }

  function renderRefunds(events) {
    const seen = new Map();
    for (const e of events) {
      if (!e.type.startsWith("refund.")) continue;
      const r = e.data.object;
      if (!seen.has(r.id)) seen.set(r.id, r);
    }
    fill($("refunds").tBodies[0], [...seen.values()], 4, (r) => {
      const tr = document.createElement("tr");
      cell(tr, code(r.id));
      cell(tr, code(r.payment_intent));
      cell(tr, r.amount != null ? money(r.amount, r.currency) : "–");
      cell(tr, badge(r.status));
      return tr;
    });
  }

  async function readFaults() {
    const f = await api("GET", "/sandbox/webhooks/faults");
    for (const k of ["duplicate", "reorder", "delay", "fail", "seed"]) $("f-" + k).value = f[k];
  }

  // busy disables a form's buttons while its request runs.
  function busy(form, fn) {
    return async (ev) => {
      ev.preventDefault();
      const buttons = form.querySelectorAll("button");
      buttons.forEach((b) => (b.disabled = true));
      try { await fn(); } finally { buttons.forEach((b) => (b.disabled = false)); }
    };
  }

  const connect = $("connect");
  connect.addEventListener("submit", busy(connect, async () => {
    secretKey = $("key").value.trim();
    $("key").value = "";
    try {
      await api("GET", "/v1/events?limit=1");
    } catch (e) {
      secretKey = "";
      say("status", "That key does not open a store: " + e.message, true);
      return;
    }
    say("status", "Store open. The page refreshes every second.");
    $("main").hidden = false;
    $("disconnect").hidden = false;
    await readFaults();
    await refresh();
    clearInterval(timer);
    timer = setInterval(refresh, 1000);
  }));

  $("disconnect").addEventListener("click", () => {
    secretKey = "";
    selectedEvent = "";
    clearInterval(timer);
    $("main").hidden = true;
    $("disconnect").hidden = true;
    say("status", "Store closed; the key is forgotten.");
    $("key").focus();
  });

  const trigger = $("trigger");
  trigger.addEventListener("submit", busy(trigger, async () => {
    const type = $("trigger-type").value;
    try {
      const r = await api("POST", "/sandbox/trigger", { type });
      const made = ["card_session", "card", "payment_intent", "refund"].filter((k) => r[k]).map((k) => k + " " + r[k]);
      say("trigger-result", "Triggered " + type + ": event " + r.event + (made.length ? " (" + made.join(", ") + ")" : "") + ".");
      refresh();
    } catch (e) {
      say("trigger-result", "Trigger failed: " + e.message, true);
    }
  }));

  const replay = $("replay");
  replay.addEventListener("submit", busy(replay, async () => {
    const status = $("replay-status").value;
    try {
      const r = await api("POST", "/v1/events/redeliver", { status });
      say("replay-result", "Queued " + r.queued + " " + status + " deliver" + (r.queued === 1 ? "y" : "ies") + " again" + (r.has_more ? "; more remain, replay again to continue." : "."));
      refresh();
    } catch (e) {
      say("replay-result", "Replay failed: " + e.message, true);
    }
  }));

  const clock = $("clock");
  clock.addEventListener("submit", busy(clock, async () => {
    const seconds = Number($("clock-seconds").value);
    try {
      const res = await fetch("/sandbox/clock", { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ advance_seconds: seconds }) });
      const c = await res.json();
      if (!res.ok) throw new Error((c.error && c.error.message) || "HTTP " + res.status);
      say("clock-result", "Moved the clock " + seconds + " s forward; now " + time(c.now) + ".");
      refresh();
    } catch (e) {
      say("clock-result", "Could not move the clock: " + e.message, true);
    }
  }));

  const faults = $("faults");
  const setFaults = async (body) => {
    try {
      // Every field of the form is sent, so the faults become what it shows;
      // no body turns every fault off.
      const f = body ? await api("POST", "/sandbox/webhooks/faults", body) : await api("DELETE", "/sandbox/webhooks/faults");
      await readFaults();
      const on = ["duplicate", "reorder", "delay", "fail"].filter((k) => f[k] > 0);
      say("faults-result", on.length ? "Faults on: " + on.map((k) => k + " " + f[k]).join(", ") + "." : "Faults off.");
    } catch (e) {
      say("faults-result", "Could not set faults: " + e.message, true);
    }
  };
  faults.addEventListener("submit", busy(faults, () => {
    const body = {};
    for (const k of ["duplicate", "reorder", "delay", "fail", "seed"]) body[k] = Number($("f-" + k).value);
    return setFaults(body);
  }));
  $("faults-off").addEventListener("click", () => setFaults());
})();
