// The scripthost web UI: plain JavaScript over the JSON API (docs/openapi.yaml).
// Every value from the ledger is set as text, never as HTML.
"use strict";

const main = document.getElementById("main");
let timer = null; // the live-update poll of the page shown

// h builds an element: h("td", {class: "mono"}, "text", child, ...).
function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children.flat(Infinity)) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

const token = () => sessionStorage.getItem("scripthost.token");
const operatorName = () => sessionStorage.getItem("scripthost.operator") || "";

// routeGen counts the pages routed to (route). An answer that arrives after the
// operator moved on to another page is dropped: its promise never settles, so a slow
// page can neither draw over the page shown now nor report its error there. A request
// made for no page in particular (the counts, the login) says opts.anyPage.
let routeGen = 0;
const never = new Promise(() => {});

async function apiCall(path, opts = {}) {
  const gen = routeGen;
  const stale = () => !opts.anyPage && gen !== routeGen;
  let res, body;
  try {
    res = await fetch("/api/v1" + path, {
      method: opts.method || "GET",
      headers: { "Authorization": "Bearer " + token(), "Content-Type": "application/json" },
      body: opts.body ? JSON.stringify(opts.body) : undefined,
    });
    body = await res.json().catch(() => ({ error: res.statusText }));
  } catch (e) {
    if (stale()) return never;
    throw e;
  }
  if (res.status === 401) { logout(body.error); throw new Error(body.error); }
  if (stale()) return never;
  if (!res.ok) throw new Error(body.error || res.statusText);
  return { body, res };
}

async function api(path, opts = {}) { return (await apiCall(path, opts)).body; }

// apiPage reads one page of a listing: its items and the cursor of the next, older
// page (the X-Next-Cursor header; "" on the last page).
async function apiPage(path) {
  const { body, res } = await apiCall(path);
  return { items: body, next: res.headers.get("X-Next-Cursor") || "" };
}

function status(s) { return h("span", { class: "status " + s }, s); }
function time(t) { return t && !t.startsWith("0001") ? new Date(t).toISOString().replace("T", " ").replace("Z", "") : "-"; }
function runLink(id) { return h("a", { href: "#/run/" + id, class: "mono" }, id); }
function json(v) { return h("pre", {}, v === undefined ? "" : JSON.stringify(v, null, 2)); }
function ms(a, b) { const d = new Date(b) - new Date(a); return isNaN(d) ? "-" : d + " ms"; }
// gap is the time from a to b: milliseconds under a second, else seconds, minutes, hours.
function gap(a, b) {
  const d = new Date(b) - new Date(a);
  if (isNaN(d)) return "-";
  if (d < 1000) return d + " ms";
  if (d < 60000) return (d / 1000).toFixed(3) + " s";
  return age(Math.floor(d / 1000));
}

function table(headers, rows, attrs) {
  return h("table", attrs || {},
    h("thead", {}, h("tr", {}, headers.map((x) => h("th", {}, x)))),
    h("tbody", {}, rows.length ? rows : h("tr", {}, h("td", { colspan: headers.length, class: "muted" }, "nothing here"))));
}

// confirmAction shows the confirmation dialog; extra holds inputs; resolves to true on Confirm.
function confirmAction(text, extra) {
  const modal = document.getElementById("modal");
  document.getElementById("modal-text").textContent = text;
  const slot = document.getElementById("modal-extra");
  slot.replaceChildren(...(extra ? [extra] : []));
  modal.hidden = false;
  return new Promise((resolve) => {
    const done = (ok) => { modal.hidden = true; ok_.onclick = cancel.onclick = null; resolve(ok); };
    const ok_ = document.getElementById("modal-confirm"), cancel = document.getElementById("modal-cancel");
    ok_.onclick = () => done(true);
    cancel.onclick = () => done(false);
  });
}

// page shows a page's content. A live page draws itself again every few seconds: when
// nothing changed, the nodes on screen stay (no flicker, no lost focus or selection).
function page(title, ...content) {
  // h skips the absent parts (null, undefined, false) a page passes for what it
  // does not show: appended as they are, they would print as text.
  const next = h("div", {}, h("h1", {}, title), ...content);
  if (next.innerHTML === main.innerHTML) return;
  main.replaceChildren(...next.childNodes);
}

function fail(err) { main.append(h("p", { class: "error", id: "error" }, String(err.message || err))); }

// routedHash is the hash the page shown was drawn for (route sets it).
let routedHash = "";

// setHash records a page's filters and cursor in the hash, so that a reload shows the
// same list. When the hash changed under the page (a navigation whose hashchange is
// not handled yet), it leaves it and says so: the page is about to be replaced and
// must neither undo the navigation nor draw again.
function setHash(hash) {
  if (location.hash !== routedHash) return false;
  history.replaceState(null, "", hash);
  routedHash = location.hash;
  return true;
}

// refused shows why an action was refused beside the control that asked for it, where
// the operator is looking (the page's end may be out of sight).
function refused(el, err) {
  if (!el || !el.isConnected) { fail(err); return; }
  const box = el.closest("td, .buttons, .unblock") || el.parentNode;
  let p = box.querySelector(":scope > .refusal");
  if (!p) { p = h("p", { class: "error refusal", role: "alert" }); box.append(p); }
  p.textContent = String(err.message || err);
}

// live re-renders every 2 s while the page stays shown.
function live(render) {
  const tick = async () => {
    try { await render(); } catch (e) { fail(e); }
  };
  tick();
  timer = setInterval(tick, 2000);
}

// ---- pages ----

// loginMessage is why the last login or request was refused: the login page shows it
// until a login succeeds, also when the page is drawn again on the hash change.
let loginMessage = "";

function login(message) {
  message = message || loginMessage;
  document.getElementById("nav").hidden = true;
  const tok = h("input", { id: "token", type: "password", autocomplete: "off", placeholder: "bearer token" });
  const who = h("input", { id: "operator", placeholder: "your name (recorded with your actions)", value: operatorName() });
  const err = h("p", { class: "error", id: "login-error" }, message || "");
  const form = h("form", {
    onsubmit: async (e) => {
      e.preventDefault();
      sessionStorage.setItem("scripthost.token", tok.value.trim());
      sessionStorage.setItem("scripthost.operator", who.value.trim());
      try {
        await api("/workflows", { anyPage: true });
        loginMessage = "";
        // Runs, unless the address was changed while the token was checked.
        if (!location.hash || location.hash.startsWith("#/login")) location.hash = "#/runs";
        route();
      } catch (x) { err.textContent = x.message; }
    },
  }, h("label", {}, "Token", tok), h("label", {}, "Operator", who), h("button", { type: "submit", class: "primary", id: "login" }, "Log in"), err);
  main.replaceChildren(h("div", { class: "login card" }, h("h1", {}, "Log in"),
    h("p", { class: "muted" }, "scripthost serve printed the token when it first started (or see --token-file)."), form));
}

function logout(message) {
  loginMessage = message || "";
  sessionStorage.removeItem("scripthost.token");
  location.hash = "#/login";
  login(message);
}

function filters(fields, onchange) {
  const params = new URLSearchParams(location.hash.split("?")[1] || "");
  const form = h("form", { class: "filters", onsubmit: (e) => { e.preventDefault(); onchange(); } });
  const inputs = {};
  for (const [name, options] of fields) {
    const el = options
      ? h("select", { name }, h("option", { value: "" }, "any"), options.map((o) => h("option", { value: o }, o)))
      : name === "q"
        ? h("input", { name, size: 24, type: "search", id: "search", placeholder: "search ids, names, status, errors" })
        : h("input", { name, size: 14, placeholder: name === "since" || name === "until" ? "2026-01-02T15:04:05Z" : null });
    el.value = params.get(name) || "";
    el.addEventListener("change", onchange);
    inputs[name] = el;
    form.append(h("label", {}, name === "q" ? "search" : name, el));
  }
  form.append(h("button", { type: "submit" }, "Filter"));
  const query = () => {
    const q = new URLSearchParams();
    for (const [k, el] of Object.entries(inputs)) if (el.value) q.set(k, el.value);
    return q.toString();
  };
  const value = (k) => (inputs[k] ? inputs[k].value : "");
  return { form, query, value };
}

// pager pages a listing newest first: the cursor of the page shown is in the hash (a
// reload shows the same page) and the cursors of the newer pages seen are kept, for
// "Newer". Rows that arrive later do not move the pages after the first.
function pager(onchange) {
  const params = new URLSearchParams(location.hash.split("?")[1] || "");
  const st = { cursor: params.get("cursor") || "", back: [], next: "" };
  const go = (e, fn) => { e.preventDefault(); fn(); onchange(); };
  const older = h("a", { href: "#", id: "older", class: "pager-link", hidden: true,
    onclick: (e) => go(e, () => { if (st.next) { st.back.push(st.cursor); st.cursor = st.next; } }) }, "Older →");
  const newer = h("a", { href: "#", id: "newer", class: "pager-link", hidden: true,
    onclick: (e) => go(e, () => { st.cursor = st.back.length ? st.back.pop() : ""; }) }, "← Newer");
  const newest = h("a", { href: "#", id: "newest", class: "pager-link", hidden: true,
    onclick: (e) => go(e, () => { st.cursor = ""; st.back = []; }) }, "« Newest");
  const info = h("span", { class: "muted", id: "page-info" });
  const el = h("div", { class: "pager" }, newest, newer, info, older);
  return {
    el,
    reset() { st.cursor = ""; st.back = []; },
    // query adds the cursor to a filter query.
    query(q) { return st.cursor ? (q ? q + "&" : "") + "cursor=" + encodeURIComponent(st.cursor) : q; },
    update(next, n) {
      st.next = next;
      older.hidden = !next;
      newer.hidden = !st.cursor;
      newest.hidden = !st.cursor || !st.back.length;
      const text = (st.cursor ? "older page " + (st.back.length + 1) : "newest") + " · " + n + " shown";
      if (info.textContent !== text) info.textContent = text;
    },
  };
}

// bulkFilter is the part of a page's filter a bulk action takes.
function bulkFilter(f, keys) {
  const out = {};
  for (const k of keys) if (f.value(k)) out[k] = f.value(k);
  return out;
}

const bulkVerb = { cancel: "Cancel", retry: "Retry", resolve: "Resolve" };

// bulkButton offers a bulk action over what the filter selects: it shows how many
// items the action would change (the API's list, POST /bulk/ACTION without confirm),
// and opens a dialog listing them; confirming applies it to exactly that list.
function bulkButton(action, noun, result, after) {
  const btn = h("button", { id: "bulk-" + action, class: action === "retry" ? "primary" : "danger", hidden: true });
  let plan = null, filter = {};
  btn.addEventListener("click", async () => {
    if (!plan) return;
    const shown = plan;
    const rows = shown.items.map((it) => h("tr", { "data-bulk-item": it.id },
      h("td", { class: "mono" }, it.id), h("td", {}, it.workflow), h("td", {}, it.handler), h("td", {}, status(it.status)),
      h("td", {}, it.tool || ""), h("td", { class: "error" }, it.error || "")));
    const reason = h("input", { id: "bulk-reason", placeholder: action === "resolve" ? "what you checked (required)" : "why (kept in the audit trail)" });
    const as = h("select", { id: "bulk-as" }, ["failed", "applied", "skipped"].map((o) => h("option", { value: o }, o)));
    const extra = h("div", {}, h("div", { class: "bulk-list" }, table(["Id", "Workflow", "Handler", "Status", "Tool", "Error"], rows, { id: "bulk-list" })),
      action === "resolve" ? h("label", {}, "Outcome", as) : null, h("label", {}, "Reason", reason));
    const text = bulkVerb[action] + " these " + shown.count + " " + noun + "? Exactly this list is changed; if it changed meanwhile nothing is done. " +
      "Each item is recorded in the audit trail with your name and reason.";
    if (!(await confirmAction(text, extra))) return;
    const body = { ...filter, confirm: shown.token, reason: reason.value, by: operatorName() };
    if (action === "resolve") body.as = as.value;
    try {
      const done = await api("/bulk/" + action, { method: "POST", body });
      result.replaceChildren(h("div", { class: "card", id: "bulk-result" },
        h("h2", {}, bulkVerb[action] + ": " + done.done + " done, " + done.failed + " refused"),
        table(["Id", "Result", "Why"], done.results.map((r) => h("tr", { "data-bulk-result": r.id },
          h("td", { class: "mono" }, r.id), h("td", {}, status(r.ok ? "ok" : "failed")), h("td", { class: "error" }, r.error || ""))))));
      await after();
    } catch (e) { fail(e); }
  });
  return {
    el: btn,
    // refresh asks what the action would change for the filter f (nothing when it is empty).
    async refresh(f) {
      filter = f;
      if (!Object.keys(f).length && action !== "resolve") { plan = null; btn.hidden = true; return; }
      try {
        plan = await api("/bulk/" + action, { method: "POST", body: f });
      } catch (e) { plan = null; btn.hidden = false; btn.disabled = true; btn.textContent = bulkVerb[action] + ": " + e.message; return; }
      btn.disabled = false;
      btn.hidden = plan.count === 0;
      const label = bulkVerb[action] + " " + plan.count + " " + (plan.count === 1 ? noun.replace(/s$/, "") : noun) + "…";
      if (btn.textContent !== label) btn.textContent = label;
    },
  };
}

const runStatuses = ["active", "committed", "skipped", "paused:transient", "paused:approval", "paused:reconciliation", "failed:logic", "failed:internal", "cancelled", "superseded"];
// shown is a run's status as operators see it: a run a retry took over is superseded
// (its stored status, kept for the record, no longer says what happens next).
function shown(r) { return r.superseded_by ? "superseded" : r.status; }
const phases = ["pending", "preparing", "prepared", "mutating", "mutated", "emitting", "executing", "committed"];

function runsPage() {
  const tbody = h("tbody");
  const stamp = h("span", { class: "live", id: "live" });
  const result = h("div", { id: "bulk-slot" });
  let f, pg, cancel, retry;
  const render = async () => {
    const q = pg.query(f.query());
    if (!setHash("#/runs" + (q ? "?" + q : ""))) return;
    const { items: runs, next } = await apiPage("/runs?limit=200&" + q);
    runs.reverse();
    tbody.replaceChildren(...runs.map((r) => h("tr", { "data-run": r.id },
      h("td", {}, runLink(r.id)), h("td", {}, r.workflow), h("td", {}, r.handler), h("td", {}, r.phase),
      h("td", {}, status(shown(r))), h("td", {}, r.attempt), h("td", {}, time(r.created_at)), h("td", { class: "error" }, r.error || ""))));
    pg.update(next, runs.length);
    const bf = bulkFilter(f, ["workflow", "handler", "status", "phase", "since", "until", "q"]);
    await Promise.all([cancel.refresh(bf), retry.refresh(bf)]);
    stamp.textContent = "live · updated " + new Date().toLocaleTimeString();
  };
  const refilter = () => { pg.reset(); return render(); };
  f = filters([["workflow"], ["handler"], ["status", runStatuses], ["phase", phases], ["since"], ["until"], ["q"]], refilter);
  pg = pager(render);
  cancel = bulkButton("cancel", "runs", result, render);
  retry = bulkButton("retry", "runs", result, render);
  page("Runs", f.form, h("div", { class: "buttons bulk" }, cancel.el, retry.el), result, pg.el,
    h("table", { id: "runs" }, h("thead", {}, h("tr", {}, ["Run", "Workflow", "Handler", "Phase", "Status", "Attempt", "Created", "Error"].map((x) => h("th", {}, x)))), tbody));
  main.querySelector("h1").append(stamp);
  live(render);
}

// flatten turns a JSON value into path → JSON text, for the state diff.
function flatten(v, path, out) {
  if (v && typeof v === "object" && !Array.isArray(v) && Object.keys(v).length) {
    for (const k of Object.keys(v)) flatten(v[k], path ? path + "." + k : k, out);
  } else out[path || "(value)"] = JSON.stringify(v);
  return out;
}

function diff(before, after) {
  const a = flatten(before, "", {}), b = flatten(after, "", {});
  const rows = [];
  for (const k of [...new Set([...Object.keys(a), ...Object.keys(b)])].sort()) {
    if (k === "updated_at" || a[k] === b[k]) continue;
    const kind = !(k in a) ? "added" : !(k in b) ? "removed" : "changed";
    rows.push(h("tr", { class: kind }, h("td", {}, k), h("td", { class: "mono" }, a[k] ?? ""), h("td", { class: "mono" }, b[k] ?? "")));
  }
  return rows.length ? h("table", { class: "diff" }, h("thead", {}, h("tr", {}, h("th", {}, "field"), h("th", {}, "before"), h("th", {}, "after"))), h("tbody", {}, rows))
    : h("p", { class: "muted" }, "no change");
}

// phasesOf groups a run's lifecycle log into phases: start, end, outcome and the
// events in between (mutations, reconcile attempts, resolutions, refused calls).
function phasesOf(lifecycle) {
  const out = [];
  let cur = null;
  for (const ev of lifecycle) {
    const d = ev.data || {};
    if (ev.type === "phase_started") {
      // A phase without its own completion event (mutate ends with its mutation's
      // outcome) ends where the next one starts.
      if (cur && cur.result === "running") { cur.end = ev.at; cur.result = "done"; }
      cur = { phase: d.phase, start: ev.at, end: null, result: "running", events: [] };
      out.push(cur);
    } else if (cur && (ev.type === "phase_completed" || ev.type === "phase_failed") && d.phase === cur.phase) {
      cur.end = ev.at; cur.result = ev.type === "phase_completed" ? "ok" : "failed"; cur.events.push(ev);
      if (ev.type === "phase_completed") cur = null;
    } else if (ev.type === "tool_refused" && out.findLast((p) => p.phase === d.phase)) {
      // A refused call belongs to the phase that made it, though the log may hold it
      // after the next phase started (a mutate phase's mutation moves the run on).
      out.findLast((p) => p.phase === d.phase).events.push(ev);
    } else if (cur) cur.events.push(ev);
    else out.push({ phase: ev.type, start: ev.at, end: ev.at, result: "event", events: [ev] });
  }
  return out;
}

// eventText renders an event's data as key=value pairs; a place in a script (file,
// line, column) is one pair, at=file:line:col.
function eventText(ev) {
  const d = { ...(ev.data || {}) };
  if (d.line) { d.at = d.file + ":" + d.line + ":" + (d.column || 0); delete d.file; delete d.line; delete d.column; }
  return Object.entries(d).filter(([k]) => k !== "phase").map(([k, v]) => k + "=" + (typeof v === "string" ? v : JSON.stringify(v))).join(" ");
}

// cancelButton offers to cancel a run that is not final, with a reason, through a
// confirmation saying what becomes of its events; null for a final or retried run.
function cancelButton(r, render) {
  const final = ["committed", "skipped", "cancelled"].includes(r.status) || r.status.startsWith("failed:");
  if (final || r.superseded_by) return null;
  return h("button", {
    id: "cancel-run", class: "danger", onclick: async (ev) => {
      const btn = ev.currentTarget;
      const reason = h("input", { id: "cancel-reason", placeholder: "why (kept in the audit trail)" });
      if (!(await confirmAction("Cancel run " + r.id + "? Before its mutation its events are released to the next run; after it the side effect is kept and next does not run; " +
        "with the mutation in flight it is cancelled once the outcome is known.", h("label", {}, "Reason", reason)))) return;
      try {
        const res = await api("/runs/" + r.id + "/cancel", { method: "POST", body: { reason: reason.value, by: operatorName() } });
        await render();
        if (res.requested) fail(new Error(res.message));
      } catch (e) { refused(document.getElementById("cancel-run") || btn, e); }
    },
  }, "Cancel run");
}

// stoppedPhase marks the last phase of a run that is not moving (paused, cancelled,
// failed) with the run's status and the time it stopped, instead of "running".
function stoppedPhase(phases, r) {
  const last = phases[phases.length - 1];
  if (last && last.result === "running" && r.status !== "active") {
    last.result = shown(r); last.end = r.updated_at;
  }
  return phases;
}

async function runPage(id) {
  const render = async () => {
    const d = await api("/runs/" + encodeURIComponent(id));
    const r = d.run;
    const actions = h("div", { class: "buttons" });
    const blocked = !r.superseded_by && (r.status.startsWith("failed:") || r.status.startsWith("paused:"));
    // A run paused on an indeterminate mutation goes on only once a person says what
    // became of the side effect: offer Resolve, not a Retry the ledger would refuse.
    const unresolved = d.mutation && d.mutation.status === "indeterminate" ? d.mutation : null;
    if (blocked && unresolved) {
      actions.append(h("span", { id: "resolve", class: "unblock" }, "Resolve mutation " + unresolved.id + " as ",
        resolveButtons({ ...unresolved, workflow: r.workflow, handler: r.handler }, render)));
    } else if (blocked) {
      actions.append(h("button", {
        id: "retry", class: "primary", onclick: async (ev) => {
          const btn = ev.currentTarget;
          if (!(await confirmAction("Retry run " + r.id + " on the newest version of " + r.workflow + "?"))) return;
          try { const res = await api("/runs/" + r.id + "/retry", { method: "POST", body: { by: operatorName() } }); location.hash = "#/run/" + res.retry.id; } catch (e) { refused(btn, e); }
        },
      }, "Retry"));
    }
    const cancel = cancelButton(r, render);
    if (cancel) actions.append(cancel);
    const snaps = d.snapshots;
    const timeline = h("ol", { class: "timeline", id: "timeline" });
    // Each lifecycle event shows when it was written and how long after the one before.
    const prevAt = {};
    d.lifecycle.forEach((e, i) => { prevAt[e.seq] = i ? d.lifecycle[i - 1].at : null; });
    const started = {};
    for (const e of d.lifecycle) if (e.type === "phase_started") started[e.at + "/" + (e.data || {}).phase] = e;
    stoppedPhase(phasesOf(d.lifecycle), r).forEach((p) => {
      const first = started[p.start + "/" + p.phase];
      const li = h("li", { class: p.result, "data-phase": p.phase },
        h("div", { class: "phase-head" }, p.phase, " ", status(p.result), " ",
          h("span", { class: "muted" }, h("time", { class: "at", datetime: p.start }, time(p.start)),
            first && prevAt[first.seq] ? " (+" + gap(prevAt[first.seq], p.start) + ")" : "", " · ", p.end ? ms(p.start, p.end) : "running")));
      const calls = p.events;
      if (calls.length) li.append(table(["Event", "At", "Since previous", "Details"], calls.map((e) => h("tr", { "data-seq": e.seq },
        h("td", {}, e.type), h("td", { class: "mono at" }, time(e.at)), h("td", { class: "mono gap" }, prevAt[e.seq] ? "+" + gap(prevAt[e.seq], e.at) : "-"),
        h("td", { class: "mono" }, eventText(e))))));
      timeline.append(li);
    });
    const snapList = h("div", { id: "snapshots" });
    snaps.forEach((s, i) => {
      const det = h("details", {}, h("summary", {}, "#" + s.seq + " " + s.phase + " · ", status(s.status), " ", h("span", { class: "muted" }, time(s.at))));
      det.append(h("h3", {}, "State diff from the previous snapshot"), diff(i ? snaps[i - 1].run : {}, s.run), h("h3", {}, "Snapshot"), json(s.run));
      snapList.append(det);
    });
    // The events the run reserved or its failed prepare phase peeked at; a blocked
    // run's pending ones can be set aside (a poison event) so the handler goes on.
    const skip = async (ev, btn) => {
      const reason = h("input", { id: "skip-reason", placeholder: "why (kept in the audit trail)" });
      if (!(await confirmAction("Set event " + ev.topic + "/" + ev.id + " aside? It stays listed as skipped, no run takes it again, and run " + r.id +
        " is retried without it.", h("label", {}, "Reason", reason)))) return;
      try {
        const res = await api("/events/skip", { method: "POST", body: { workflow: r.workflow, topic: ev.topic, id: ev.id, reason: reason.value, by: operatorName() } });
        if (res.retried.length) location.hash = "#/run/" + res.retried[0].retry.id; else await render();
      } catch (e) { refused(btn, e); }
    };
    const events = (d.events || []).length ? table(["Topic", "Event", "How", "Status", ""], d.events.map((ev) => h("tr", { "data-event": ev.topic + "/" + ev.id },
      h("td", {}, ev.topic), h("td", { class: "mono" }, ev.id), h("td", {}, ev.how), h("td", {}, status(ev.status || "-")),
      h("td", {}, blocked && ev.status === "pending" ? h("button", { class: "skip-event", onclick: (e) => skip(ev, e.currentTarget) }, "Skip event") : ""))), { id: "run-events" })
      : h("p", { class: "muted" }, "none");
    const m = d.mutation;
    page("Run " + r.id,
      h("div", { class: "card" }, h("dl", { class: "kv" },
        h("dt", {}, "workflow"), h("dd", {}, r.workflow + " v" + r.version), h("dt", {}, "handler"), h("dd", {}, r.handler + " (" + r.kind + ")"),
        h("dt", {}, "status"), h("dd", { id: "run-status" }, status(shown(r))), h("dt", {}, "phase"), h("dd", {}, r.phase),
        r.superseded_by && h("dt", {}, "retried by"), r.superseded_by && h("dd", {}, runLink(r.superseded_by), " (was " + r.status + ")"),
        h("dt", {}, "attempt"), h("dd", {}, r.attempt), r.retry_of && h("dt", {}, "retries"), r.retry_of && h("dd", {}, runLink(r.retry_of)),
        r.error && h("dt", {}, "error"), r.error && h("dd", { class: "error" }, r.error)), actions),
      h("h2", {}, "Events"), events,
      h("h2", {}, "Phase timeline"), timeline,
      h("h2", {}, "Mutation"), m ? table(["Mutation", "Tool", "Status", "Idempotency key", "Result"], [h("tr", {},
        h("td", { class: "mono" }, m.id), h("td", {}, m.tool), h("td", {}, status(m.status)), h("td", { class: "mono" }, m.idempotency_key), h("td", {}, json(m.result)))]) : h("p", { class: "muted" }, "none"),
      h("h2", {}, "State"), h("div", { class: "card" }, h("h3", {}, "input"), json(r.input_state), h("h3", {}, "output"), json(r.output_state)),
      h("h2", {}, "Snapshots and state diffs"), snapList);
  };
  try { await render(); } catch (e) { fail(e); }
}

function mutationRows(ms, extra) {
  return ms.map((m) => h("tr", { "data-mutation": m.id },
    h("td", { class: "mono" }, m.id), h("td", {}, runLink(m.run_id)), h("td", {}, m.tool), h("td", {}, status(m.status)),
    h("td", { class: "mono" }, m.idempotency_key), h("td", {}, m.reconcile_attempts), h("td", { class: "error" }, m.error || ""),
    extra ? h("td", {}, extra(m)) : null));
}

function mutationsPage() {
  const tbody = h("tbody");
  let f, pg;
  const render = async () => {
    const q = pg.query(f.query());
    if (!setHash("#/mutations" + (q ? "?" + q : ""))) return;
    const { items: ms, next } = await apiPage("/mutations?limit=200&" + q);
    tbody.replaceChildren(...mutationRows(ms.reverse()));
    pg.update(next, ms.length);
  };
  f = filters([["workflow"], ["run"], ["status", ["in_flight", "applied", "failed", "needs_reconcile", "indeterminate", "skipped"]], ["q"]], () => { pg.reset(); return render(); });
  pg = pager(render);
  page("Mutations", f.form, pg.el, h("table", { id: "mutations" }, h("thead", {}, h("tr", {}, ["Mutation", "Run", "Tool", "Status", "Idempotency key", "Reconciles", "Error"].map((x) => h("th", {}, x)))), tbody));
  live(render);
}

// age says how long ago t was, or a number of seconds, in the largest two units.
function age(t) {
  const secs = typeof t === "number" ? t : Math.max(0, Math.floor((Date.now() - new Date(t)) / 1000));
  if (isNaN(secs)) return "-";
  const units = [["d", 86400], ["h", 3600], ["m", 60], ["s", 1]];
  const parts = [];
  let rest = secs;
  for (const [u, n] of units) {
    if (rest >= n || (u === "s" && !parts.length)) { parts.push(Math.floor(rest / n) + u); rest %= n; }
    if (parts.length === 2) break;
  }
  return parts.join(" ");
}

function params(m) { return h("code", { class: "mono params" }, m.params === undefined ? "-" : JSON.stringify(m.params)); }

// resolveMutation resolves m as as after a confirmation that shows what the mutation
// was (tool, params, workflow, age), then calls after.
async function resolveMutation(m, as, after, btn) {
  const result = h("textarea", { id: "resolve-result", placeholder: "the tool's result as JSON (optional)" });
  const text = { applied: "The side effect happened: the run continues to next with this result.",
    failed: "It did not happen: the events are released and a fresh run prepares again.",
    skipped: "Leave it: the events are marked skipped and next runs with status skipped." }[as];
  const facts = h("dl", { class: "kv", id: "resolve-facts" },
    h("dt", {}, "workflow"), h("dd", {}, (m.workflow || "-") + (m.handler ? " / " + m.handler : "")),
    h("dt", {}, "run"), h("dd", { class: "mono" }, m.run_id),
    h("dt", {}, "tool"), h("dd", {}, m.tool),
    h("dt", {}, "params"), h("dd", { id: "resolve-params" }, params(m)),
    h("dt", {}, "age"), h("dd", { id: "resolve-age" }, age(m.created_at)),
    h("dt", {}, "key"), h("dd", { class: "mono" }, m.idempotency_key));
  const extra = h("div", {}, facts, as === "applied" ? h("label", {}, "Result", result) : null);
  if (!(await confirmAction("Resolve mutation " + m.id + " as " + as + "? " + text, extra))) return;
  const body = { as, by: operatorName() };
  if (as === "applied" && result.value.trim()) {
    try { body.result = JSON.parse(result.value); } catch (e) { refused(btn, new Error("result is not valid JSON: " + e.message)); return; }
  }
  try { await api("/mutations/" + m.id + "/resolve", { method: "POST", body }); await after(); } catch (e) { refused(btn, e); }
}

function resolveButtons(m, after) {
  return ["applied", "failed", "skipped"].map((as) => h("button", { class: "resolve-" + as, onclick: (ev) => resolveMutation(m, as, after, ev.currentTarget) }, as));
}

function queuePage() {
  const tbody = h("tbody");
  const result = h("div", { id: "bulk-slot" });
  let f, resolve;
  const render = async () => {
    const q = f.query();
    if (!setHash("#/queue" + (q ? "?" + q : ""))) return;
    const ms = await api("/mutations/indeterminate?" + q);
    tbody.replaceChildren(...ms.map((m) => h("tr", { "data-mutation": m.id },
      h("td", { class: "mono" }, m.id), h("td", {}, m.workflow || "-"), h("td", {}, runLink(m.run_id)), h("td", {}, m.tool),
      h("td", {}, params(m)), h("td", {}, age(m.created_at)), h("td", { class: "mono" }, m.idempotency_key),
      h("td", {}, m.reconcile_attempts), h("td", { class: "error" }, m.error || ""), h("td", {}, resolveButtons(m, render)))));
    await resolve.refresh(bulkFilter(f, ["workflow", "q"]));
  };
  f = filters([["workflow"], ["q"]], render);
  resolve = bulkButton("resolve", "mutations", result, render);
  page("Indeterminate mutations", h("p", { class: "muted" }, "Side effects whose outcome reconciliation could not decide. Find out what happened, then resolve each."),
    f.form, h("div", { class: "buttons bulk" }, resolve.el), result,
    h("table", { id: "queue" }, h("thead", {}, h("tr", {}, ["Mutation", "Workflow", "Run", "Tool", "Params", "Age", "Idempotency key", "Reconciles", "Error", "Resolve as"].map((x) => h("th", {}, x)))), tbody));
  live(render);
}

// ---- events ----

// eventsPage lists the topics with their backlog; with a workflow and a topic in the
// hash, that topic's events, paged and searched, each pending one with a Skip button.
function eventsPage() {
  const params = new URLSearchParams(location.hash.split("?")[1] || "");
  if (params.get("workflow") && params.get("topic")) return topicPage(params.get("workflow"), params.get("topic"));
  const tbody = h("tbody");
  const render = async () => {
    const ts = await api("/topics");
    tbody.replaceChildren(...ts.map((t) => h("tr", { "data-topic": t.workflow + "/" + t.topic },
      h("td", {}, t.workflow),
      h("td", {}, h("a", { href: "#/events?workflow=" + encodeURIComponent(t.workflow) + "&topic=" + encodeURIComponent(t.topic), class: "topic-link" }, t.topic)),
      h("td", { class: "pending" }, t.pending), h("td", {}, t.reserved), h("td", {}, t.consumed), h("td", {}, t.skipped),
      h("td", { class: "backlog" }, t.pending ? age(t.backlog_seconds) : "-"), h("td", {}, time(t.last)))));
  };
  page("Events", h("p", { class: "muted" }, "Every topic that has events: how many wait (pending), are held by a run (reserved), were consumed or set aside (skipped), and how long the oldest pending one has waited."),
    h("table", { id: "topics" }, h("thead", {}, h("tr", {}, ["Workflow", "Topic", "Pending", "Reserved", "Consumed", "Skipped", "Backlog", "Last published"].map((x) => h("th", {}, x)))), tbody));
  live(render);
}

function topicPage(workflow, topic) {
  const tbody = h("tbody");
  let f, pg;
  const base = "workflow=" + encodeURIComponent(workflow) + "&topic=" + encodeURIComponent(topic);
  const skip = async (ev) => {
    const reason = h("input", { id: "skip-reason", placeholder: "why (kept in the audit trail)" });
    if (!(await confirmAction("Set event " + topic + "/" + ev.id + " aside? It stays listed as skipped, no run takes it again, and a handler blocked on it is retried without it.",
      h("label", {}, "Reason", reason)))) return;
    try {
      await api("/events/skip", { method: "POST", body: { workflow, topic, id: ev.id, reason: reason.value, by: operatorName() } });
      await render();
    } catch (e) { fail(e); }
  };
  const render = async () => {
    const q = pg.query(f.query());
    if (!setHash("#/events?" + base + (q ? "&" + q : ""))) return;
    const { items: evs, next } = await apiPage("/events?limit=100&" + base + (q ? "&" + q : ""));
    evs.reverse();
    tbody.replaceChildren(...evs.map((ev) => h("tr", { "data-event": ev.id },
      h("td", {}, ev.seq), h("td", { class: "mono" }, ev.id), h("td", {}, status(ev.status)),
      h("td", {}, ev.reserved_by ? runLink(ev.reserved_by) : "-"), h("td", {}, ev.caused_by ? h("span", { class: "mono" }, ev.caused_by) : "-"),
      h("td", {}, time(ev.created_at)), h("td", { class: "mono params" }, JSON.stringify(ev.payload ?? null).slice(0, 200)),
      h("td", {}, ev.status === "pending" ? h("button", { class: "skip-event", onclick: () => skip(ev) }, "Skip") : ""))));
    pg.update(next, evs.length);
  };
  f = filters([["status", ["pending", "reserved", "consumed", "skipped"]], ["q"]], () => { pg.reset(); return render(); });
  pg = pager(render);
  page("Events of " + workflow + " / " + topic, h("p", {}, h("a", { href: "#/events", id: "all-topics" }, "← all topics")), f.form, pg.el,
    h("table", { id: "events" }, h("thead", {}, h("tr", {}, ["Seq", "Event id", "Status", "Reserved by", "Published by", "Published", "Payload", ""].map((x) => h("th", {}, x)))), tbody));
  live(render);
}

// ---- needs attention ----

// unblockButton takes one action that unblocks a handler (resolve, retry, skip an event).
function unblockButton(b, x, after) {
  if (x.kind === "resolve") return h("span", { class: "unblock", "data-kind": "resolve" }, "resolve " + x.target + " as ", resolveButtons(b.mutation, after));
  const label = x.kind === "retry" ? "retry run " + x.target : "skip event " + x.target;
  return h("button", {
    class: "unblock", "data-kind": x.kind, "data-target": x.target, title: x.hint + " (" + x.command + ")",
    onclick: async (ev) => {
      const btn = ev.currentTarget;
      if (!(await confirmAction(label + "? " + x.hint + "."))) return;
      try {
        if (x.kind === "retry") await api("/runs/" + encodeURIComponent(x.target) + "/retry", { method: "POST", body: { by: operatorName() } });
        else {
          const [workflow, topic, ...id] = x.target.split("/");
          await api("/events/skip", { method: "POST", body: { workflow, topic, id: id.join("/"), by: operatorName() } });
        }
        await after();
      } catch (e) { refused(btn, e); }
    },
  }, label);
}

function section(id, title, n, headers, rows) {
  return h("section", { id }, h("h2", {}, title + " ", h("span", { class: n ? "count" : "count zero" }, n)), table(headers, rows));
}

function attentionPage() {
  const body = h("div", { id: "attention" });
  const render = async () => {
    const a = await api("/attention");
    setCounts(a.counts);
    body.replaceChildren(...[
      a.counts.total ? null : h("p", { class: "muted", id: "attention-none" }, "Nothing needs attention."),
      section("attention-blocked", "Blocked handlers", a.blocked.length, ["Handler", "Run", "Status", "Reason", "Blocked for", "To unblock"],
        a.blocked.map((b) => h("tr", { "data-handler": b.workflow + "/" + b.handler },
          h("td", {}, b.workflow + " / " + b.handler), h("td", {}, runLink(b.run_id)), h("td", {}, status(b.status)),
          h("td", { class: "error" }, b.reason), h("td", {}, age(b.since)),
          h("td", {}, b.actions.map((x) => h("div", {}, unblockButton(b, x, render))))))),
      section("attention-indeterminate", "Indeterminate mutations", a.indeterminate.length,
        ["Mutation", "Workflow", "Run", "Tool", "Params", "Age", "Resolve as"],
        a.indeterminate.map((m) => h("tr", { "data-mutation": m.id },
          h("td", { class: "mono" }, m.id), h("td", {}, m.workflow + (m.handler ? " / " + m.handler : "")), h("td", {}, runLink(m.run_id)),
          h("td", {}, m.tool), h("td", {}, params(m)), h("td", {}, age(m.age_seconds)), h("td", {}, resolveButtons(m, render))))),
      section("attention-failed", "Failed runs", a.failed_runs.length, ["Run", "Handler", "Status", "Error", "When"],
        a.failed_runs.map((r) => h("tr", { "data-run": r.id },
          h("td", {}, runLink(r.id)), h("td", {}, r.workflow + " / " + r.handler), h("td", {}, status(r.status)),
          h("td", { class: "error" }, r.error), h("td", {}, time(r.updated_at))))),
      section("attention-approvals", "Agent calls waiting for approval", a.approvals.length, ["Session", "Task", "Call", "Tool", "Arguments", "Waiting"],
        a.approvals.map((x) => h("tr", { "data-call": x.call_id },
          h("td", {}, h("a", { href: "#/agent/" + encodeURIComponent(x.session), class: "mono" }, x.session)), h("td", {}, x.task),
          h("td", { class: "mono" }, x.call_id), h("td", {}, x.tool), h("td", { class: "mono" }, JSON.stringify(x.arguments ?? null)),
          h("td", {}, age(x.age_seconds))))),
      section("attention-hosts", "Hosts that stopped renewing", a.stale_hosts.length, ["Host", "Workflow", "Lease expired"],
        a.stale_hosts.map((l) => h("tr", {}, h("td", { class: "mono" }, l.owner), h("td", {}, l.workflow), h("td", {}, age(l.expired_seconds) + " ago"))))
    ].filter(Boolean));
  };
  page("Needs attention", h("p", { class: "muted" }, "What waits for a person, and the action that deals with each."), body);
  live(render);
}

// ---- overview ----

function overviewPage() {
  const body = h("div", { id: "overview" });
  const rate = (x) => (x * 60).toFixed(2) + " /min";
  const render = async () => {
    const o = await api("/overview");
    const statuses = Object.keys(o.runs).sort();
    body.replaceChildren(
      h("div", { class: "card" }, h("dl", { class: "kv" },
        h("dt", {}, "runs (last " + age(o.window_seconds) + ")"), h("dd", { id: "overview-rate" }, rate(o.runs_per_second)),
        h("dt", {}, "failures (last " + age(o.window_seconds) + ")"), h("dd", { id: "overview-failures" }, rate(o.failures_per_second)))),
      h("h2", {}, "Runs by status"),
      table(["Status", "Runs"], statuses.map((st) => h("tr", { "data-status": st },
        h("td", {}, h("a", { href: "#/runs?status=" + encodeURIComponent(st) }, status(st))), h("td", {}, o.runs[st]))), { id: "overview-runs" }),
      h("h2", {}, "Phase times (last " + age(o.window_seconds) + ")"),
      table(["Phase", "Count", "p50", "p99"], o.phases.map((p) => h("tr", { "data-phase": p.phase },
        h("td", {}, p.phase), h("td", {}, p.count), h("td", {}, p.p50_ms + " ms"), h("td", {}, p.p99_ms + " ms"))), { id: "overview-phases" }));
  };
  page("Overview", body);
  live(render);
}

// ---- hosts ----

function hostState(st) { return h("span", { class: "status " + st.replace(/ /g, "-") }, st); }
function silentFor(ms) { return ms < 10000 ? (ms / 1000).toFixed(1) + " s" : age(Math.round(ms / 1000)); }

function hostsPage() {
  const body = h("div", { id: "hosts" });
  const render = async () => {
    const x = await api("/hosts");
    if (!x.shared) { body.replaceChildren(h("p", { class: "muted" }, "This ledger is not shared (SQLite): one host, no leases.")); return; }
    const rows = [];
    for (const host of x.hosts) {
      const renewed = host.renewed_at ? time(host.renewed_at) + " (" + age(host.silent_seconds) + " ago)" : "-";
      const cells = (l) => [h("td", { class: "mono" }, host.owner), h("td", { class: "host-state" }, hostState(host.state)), h("td", {}, renewed),
        h("td", {}, l ? l.workflow : "-"), h("td", {}, l ? l.claims : "-"), h("td", {}, l ? time(l.expires_at) + (l.expired ? " (expired)" : "") : "-")];
      if (!host.leases.length) rows.push(h("tr", { "data-host": host.owner, "data-state": host.state }, ...cells(null)));
      for (const l of host.leases) rows.push(h("tr", { "data-host": host.owner, "data-state": host.state, "data-workflow": l.workflow }, ...cells(l)));
    }
    for (const f of x.free) rows.push(h("tr", { "data-workflow": f.workflow }, h("td", {}, "-"), h("td", {}, status("free")), h("td", {}, "-"), h("td", {}, f.workflow), h("td", {}, f.claims), h("td", {}, "-")));
    const stale = x.hosts.filter((o) => o.state === "stale").length;
    body.replaceChildren(...[h("p", { class: "muted" }, "A host holds a workflow's lease while it drives a pass over it. A stale host stopped renewing: the next host to claim its workflows takes them over. A host taken over lost a workflow after its last renewal."),
      stale ? h("p", { class: "error", id: "hosts-stale" }, stale + (stale === 1 ? " host stopped renewing: see " : " hosts stopped renewing: see "), h("a", { href: "#/attention" }, "Needs attention")) : null,
      table(["Host", "State", "Last renewal", "Workflow", "Claims", "Lease expires"], rows, { id: "hosts-table" }),
      section("takeovers", "Takeovers", x.takeovers.length, ["Taken at", "Workflow", "From", "To", "Silent for", "Claim"],
        x.takeovers.map((t) => h("tr", { "data-workflow": t.workflow, "data-from": t.from, "data-to": t.to },
          h("td", {}, time(t.at)), h("td", {}, t.workflow), h("td", { class: "mono" }, t.from), h("td", { class: "mono" }, t.to),
          h("td", { class: "silent" }, silentFor(t.silent_ms)), h("td", {}, t.token))))].filter(Boolean));
  };
  page("Hosts", body);
  live(render);
}

// setCounts shows the attention counts in the nav.
function setCounts(c) {
  const put = (id, n) => { const el = document.getElementById(id); if (el) { el.textContent = n ? String(n) : ""; el.hidden = !n; } };
  put("nav-attention-count", c.total);
  put("nav-queue-count", c.indeterminate);
}

let countsTimer = null;
// watchCounts keeps the nav's counts current on every page.
function watchCounts() {
  if (countsTimer) return;
  const tick = async () => { try { setCounts((await api("/attention", { anyPage: true })).counts); } catch (e) { /* the page shows errors */ } };
  tick();
  countsTimer = setInterval(tick, 5000);
}

async function workflowsPage() {
  const render = async () => {
    const [wfs, att] = await Promise.all([api("/workflows"), api("/attention")]);
    const blocked = new Set(att.blocked.map((b) => b.workflow));
    const rows = wfs.map((w) => h("tr", { "data-workflow": w.name },
      h("td", {}, h("a", { href: "#/runs?workflow=" + encodeURIComponent(w.name) }, w.name)), h("td", {}, w.latest_version),
      h("td", {}, status(w.paused ? "paused" : blocked.has(w.name) ? "blocked" : "active")),
      h("td", {}, w.handlers.map((x) => h("div", {}, x.name + " (" + x.kind + (x.schedule ? ", " + x.schedule : "") + (x.subscribe ? ", on " + x.subscribe.join(", ") : "") + ")"))),
      h("td", {}, w.schedules.map((s) => h("div", {}, s.producer + " next " + time(s.next_run_at)))),
      h("td", {}, h("button", {
        class: w.paused ? "resume" : "pause", onclick: async () => {
          const act = w.paused ? "resume" : "pause";
          if (!(await confirmAction((w.paused ? "Resume" : "Pause") + " workflow " + w.name + "?"))) return;
          try { await api("/workflows/" + encodeURIComponent(w.name) + "/" + act, { method: "POST", body: { by: operatorName() } }); await render(); } catch (e) { fail(e); }
        },
      }, w.paused ? "Resume" : "Pause"))));
    page("Workflows", table(["Workflow", "Version", "State", "Handlers", "Schedules", ""], rows, { id: "workflows" }));
  };
  try { await render(); } catch (e) { fail(e); }
}

function plansPage() {
  const tbody = h("tbody");
  let f, pg;
  const render = async () => {
    const q = pg.query(f.query());
    if (!setHash("#/plans" + (q ? "?" + q : ""))) return;
    const { items: xs, next } = await apiPage("/executions?limit=200&" + q);
    tbody.replaceChildren(...xs.reverse().map((x) => h("tr", {},
      h("td", {}, h("a", { href: "#/plan/" + x.id }, x.id)), h("td", {}, x.steps), h("td", {}, x.failed ? status("failed") : status("ok")),
      h("td", {}, time(x.started_at)), h("td", {}, time(x.ended_at)))));
    pg.update(next, xs.length);
  };
  const draw = async () => { try { await render(); } catch (e) { fail(e); } };
  f = filters([["plan"], ["q"]], () => { pg.reset(); return draw(); });
  pg = pager(draw);
  page("Plan executions", f.form, pg.el, h("table", { id: "executions" },
    h("thead", {}, h("tr", {}, ["Execution", "Steps", "Failed", "Started", "Ended"].map((x) => h("th", {}, x)))), tbody));
  draw();
}

// diagnosticLine is a checker diagnostic as `scripthost plan show` prints it:
// file:line:column: level code: message (checker).
function diagnosticLine(a) {
  return a.file + ":" + (a.line || 0) + ":" + (a.column || 0) + ": " + a.level + " " + (a.code || "") + ": " + a.message + " (" + a.checker + ")";
}

// evidence shows what a step's record keeps beyond its result: the plan's intent, the
// checker diagnostics one line each, and the rest (hash, attempts, who authorized it).
function evidence(d) {
  if (!d || typeof d !== "object") return [h("h3", {}, "evidence"), json(d)];
  const diags = (d.artifacts || []).filter((a) => a.kind === "diagnostic");
  const rest = Object.fromEntries(Object.entries(d).filter(([k]) => k !== "artifacts" && k !== "intent"));
  return [
    d.intent && h("p", { class: "intent" }, "intent: " + d.intent),
    diags.length ? [h("h3", {}, "diagnostics"), h("ul", { class: "diagnostics mono" },
      diags.map((a) => h("li", { class: "diag " + (a.level || "") }, diagnosticLine(a))))] : null,
    h("details", {}, h("summary", {}, "evidence"), json(rest))];
}

async function planPage(id) {
  try {
    const recs = await api("/executions/" + id);
    page("Plan execution " + id, ...recs.map((r) => h("div", { class: "card step" },
      h("h2", {}, r.step_id + " · " + r.tool + " ", status(r.success ? "ok" : "failed"), " ", h("span", { class: "muted" }, r.duration_ms + " ms, exit " + r.exit_code)),
      h("p", { class: "muted" }, time(r.started_at) + " → " + time(r.ended_at)),
      r.error && h("p", { class: "error" }, (r.error_code ? r.error_code + ": " : "") + r.error),
      h("h3", {}, "arguments"), json(r.arguments),
      r.result !== undefined && [h("h3", {}, "result"), json(r.result)],
      r.stdout && [h("h3", {}, "stdout"), h("pre", {}, r.stdout)], r.stderr && [h("h3", {}, "stderr"), h("pre", {}, r.stderr)],
      r.diagnostics !== undefined && evidence(r.diagnostics))));
  } catch (e) { fail(e); }
}

const sessionStatuses = ["running", "paused", "completed", "failed"];

function tokens(u) { return u ? (u.prompt_tokens || 0) + " + " + (u.completion_tokens || 0) : "-"; }

function agentsPage() {
  const tbody = h("tbody");
  let f, pg;
  const render = async () => {
    const q = pg.query(f.query());
    if (!setHash("#/agents" + (q ? "?" + q : ""))) return;
    const { items: ss, next } = await apiPage("/agent/sessions?limit=200&" + q);
    pg.update(next, ss.length);
    tbody.replaceChildren(...ss.map((x) => {
      const st = x.state || {};
      const steps = Object.values(st.steps || {});
      return h("tr", { "data-session": x.id },
        h("td", {}, h("a", { href: "#/agent/" + encodeURIComponent(x.id), class: "mono" }, x.id)), h("td", {}, x.task),
        h("td", {}, status(x.status)), h("td", {}, steps.filter((s) => s.status === "completed").length + " / " + steps.length),
        h("td", {}, tokens(st.usage)), h("td", {}, time(x.created_at)), h("td", {}, time(x.updated_at)));
    }));
  };
  f = filters([["status", sessionStatuses], ["q"]], () => { pg.reset(); return render(); });
  pg = pager(render);
  page("Agent sessions", f.form, pg.el, h("table", { id: "sessions" },
    h("thead", {}, h("tr", {}, ["Session", "Task", "Status", "Steps done", "Tokens (prompt + completion)", "Started", "Updated"].map((x) => h("th", {}, x)))), tbody));
  live(render);
}

// decideCall approves or denies a call that waits for approval, after a confirmation.
async function decideCall(sessionID, c, approve, render, btn) {
  const verb = approve ? "approve" : "deny";
  const text = approve
    ? "Approve " + c.tool + " (call " + c.call_id + ")? It runs when the session resumes (scripthost agent resume " + sessionID + ")."
    : "Deny " + c.tool + " (call " + c.call_id + ")? It never runs; the model is told so when the session resumes.";
  if (!(await confirmAction(text, h("div", {}, h("h3", {}, "arguments"), json(c.arguments))))) return;
  try {
    await api("/agent/sessions/" + encodeURIComponent(sessionID) + "/" + verb, { method: "POST", body: { call: c.call_id, by: operatorName() } });
    await render();
  } catch (e) { refused(btn, e); }
}

// exitOf is how a call that ran a command ended when it did not succeed: "exit N"
// for a non-zero exit code, "timed out" or "killed"; null otherwise.
function exitOf(c) {
  const r = c.result;
  if (!r || typeof r !== "object" || typeof r.exit_code !== "number") return null;
  if (r.timed_out) return "timed out";
  if (r.exit_code === -1) return "killed";
  return r.exit_code ? "exit " + r.exit_code : null;
}

function callRow(sessionID, c, render) {
  const pending = c.status === "pending_approval";
  const out = c.error || (c.result !== undefined ? JSON.stringify(c.result) : "");
  const exit = exitOf(c);
  return h("tr", { "data-call": c.call_id },
    h("td", { class: "mono" }, c.call_id), h("td", {}, c.tool), h("td", { class: "mono" }, JSON.stringify(c.arguments ?? null)),
    h("td", { class: "call-status" }, exit ? h("span", { class: "status failed", title: c.status + ": the command ran and did not succeed" }, exit) : status(c.status)),
    h("td", { class: "decision" }, c.decision || ""),
    h("td", { class: c.error ? "error mono" : "mono" }, out.length > 300 ? out.slice(0, 300) + "…" : out),
    h("td", {}, c.duration_ms + " ms"),
    h("td", {}, pending && [
      h("button", { class: "approve primary", onclick: (ev) => decideCall(sessionID, c, true, render, ev.currentTarget) }, "Approve"), " ",
      h("button", { class: "deny", onclick: (ev) => decideCall(sessionID, c, false, render, ev.currentTarget) }, "Deny")]));
}

async function agentPage(id) {
  const render = async () => {
    const tr = await api("/agent/sessions/" + encodeURIComponent(id));
    const x = tr.session, st = x.state || {};
    // The steps in the task's order.
    const order = ((x.spec || {}).steps || []).map((s) => s.id);
    const steps = Object.values(st.steps || {}).sort((a, b) => order.indexOf(a.id) - order.indexOf(b.id));
    const pending = tr.calls.filter((c) => c.status === "pending_approval");
    const byTurn = {};
    for (const c of tr.calls) (byTurn[c.step_id + "/" + c.turn] ||= []).push(c);
    const turnsByStep = {};
    for (const t of tr.turns) (turnsByStep[t.step_id] ||= []).push(t);
    const stepCards = steps.map((s) => h("div", { class: "card step", "data-step": s.id },
      h("h2", {}, "step " + s.id + " ", status(s.status), " ",
        h("span", { class: "muted" }, s.turns + " turns · " + tokens(s.usage) + " tokens · " + s.duration_ms + " ms")),
      s.summary && h("p", {}, s.summary),
      s.error && h("p", { class: "error" }, (s.code ? s.code + ": " : "") + s.error),
      (turnsByStep[s.id] || []).map((t) => {
        let said = "";
        try { said = ((t.response || {}).message || {}).content || ""; } catch (e) { said = ""; }
        const calls = byTurn[t.step_id + "/" + t.turn] || [];
        return h("div", { class: "turn", "data-turn": t.step_id + "/" + t.turn },
          h("h3", {}, "turn " + t.turn + " ", h("span", { class: "muted" },
            time(t.started_at) + " · " + t.duration_ms + " ms · " + t.prompt_tokens + " + " + t.completion_tokens + " tokens" + (t.retries ? " · " + t.retries + " retries" : ""))),
          said && h("p", { class: "said" }, said),
          calls.length ? table(["Call", "Tool", "Arguments", "Status", "Decision", "Result", "Took", ""], calls.map((c) => callRow(x.id, c, render))) : null);
      })));
    page("Agent session " + x.id,
      h("div", { class: "card" }, h("dl", { class: "kv" },
        h("dt", {}, "task"), h("dd", {}, x.task), h("dt", {}, "status"), h("dd", { id: "session-status" }, status(x.status)),
        h("dt", {}, "tokens"), h("dd", { id: "session-tokens" }, tokens(tr.usage) + " (prompt + completion)"),
        h("dt", {}, "started"), h("dd", {}, time(x.created_at)), h("dt", {}, "updated"), h("dd", {}, time(x.updated_at)))),
      pending.length ? h("div", { class: "card", id: "pending" }, h("h2", {}, "Waiting for approval"),
        h("p", { class: "muted" }, "Approve or deny each call, then resume the session: scripthost agent resume " + x.id),
        table(["Call", "Tool", "Arguments", "Status", "Decision", "Result", "Took", ""], pending.map((c) => callRow(x.id, c, render)))) : null,
      h("h2", {}, "Steps"), h("div", { id: "steps" }, stepCards),
      h("h2", {}, "Task"), json(x.spec));
  };
  try { await render(); } catch (e) { fail(e); }
}

async function actionsPage() {
  try {
    const xs = await api("/actions?limit=500");
    page("Operator actions", table(["When", "Action", "Target", "By", "Result"], xs.reverse().map((a) => h("tr", {},
      h("td", {}, time(a.at)), h("td", {}, a.action), h("td", { class: "mono" }, a.target), h("td", {}, a.by),
      h("td", {}, a.success ? status("ok") : h("span", { class: "error" }, a.error)))), { id: "actions" }));
  } catch (e) { fail(e); }
}

function route() {
  routeGen++;
  clearInterval(timer);
  routedHash = location.hash;
  if (!token()) { login(); return; }
  document.getElementById("nav").hidden = false;
  watchCounts();
  const [path] = location.hash.slice(1).split("?");
  const parts = path.split("/").filter(Boolean);
  for (const a of document.querySelectorAll("nav a")) a.classList.toggle("active", a.getAttribute("href") === "#/" + (parts[0] || "runs"));
  switch (parts[0]) {
    case "run": return runPage(decodeURIComponent(parts[1]));
    case "mutations": return mutationsPage();
    case "queue": return queuePage();
    case "events": return eventsPage();
    case "attention": return attentionPage();
    case "overview": return overviewPage();
    case "hosts": return hostsPage();
    case "workflows": return workflowsPage();
    case "plans": return plansPage();
    case "plan": return planPage(parts.slice(1).join("/"));
    case "agents": return agentsPage();
    case "agent": return agentPage(decodeURIComponent(parts[1]));
    case "actions": return actionsPage();
    case "login": return login();
    default: return runsPage();
  }
}

document.getElementById("logout").addEventListener("click", () => logout());
window.addEventListener("hashchange", route);
route();
