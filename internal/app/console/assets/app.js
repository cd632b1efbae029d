// ctxkit console. Every value that comes from the API is put on the page as
// text (text nodes, textContent, attribute values the page builds itself),
// never parsed as markup: a breadcrumb is data, whatever it holds.

const TOKEN_KEY = "ctxkit.token";
const PAGE = 50;

// --- DOM -----------------------------------------------------------------

// h builds an element: attrs are attributes (on* keys are listeners),
// children are nodes or strings (which become text nodes).
function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else if (k === "text") el.textContent = v;
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue;
    el.append(typeof c === "string" || typeof c === "number" ? show(String(c)) : c);
  }
  return el;
}

// show makes direction controls visible: a title holding U+202E must not
// reorder the text around it, nor hide what it says.
const bidi = /[\u061C\u200E\u200F\u202A-\u202E\u2066-\u2069]/g;
function show(s) {
  return String(s).replace(bidi, (c) => "⟦U+" + c.codePointAt(0).toString(16).toUpperCase().padStart(4, "0") + "⟧");
}

// data is a value of the API as an isolated run of text.
function data(s) {
  return h("bdi", {}, show(s ?? ""));
}

const $ = (id) => document.getElementById(id);
const main = () => $("main");

function page(title, ...children) {
  const m = main();
  m.replaceChildren(h("h1", { id: "page-title", tabindex: "-1" }, title), ...children);
  document.title = show(title) + " · ctxkit console";
  $("page-title").focus();
}

function bytes(n) {
  if (n < 1024) return n + " B";
  if (n < 1 << 20) return (n / 1024).toFixed(1) + " KB";
  return (n / (1 << 20)).toFixed(1) + " MB";
}

function when(s) {
  const d = new Date(s);
  return isNaN(d) ? "" : d.toISOString().replace("T", " ").slice(0, 19) + "Z";
}

// --- the token and the API ------------------------------------------------

// The token lives in sessionStorage only: gone with the tab, never in a
// cookie (so no request carries it unasked) nor in a URL.
const auth = {
  get token() { return sessionStorage.getItem(TOKEN_KEY); },
  set(t) { sessionStorage.setItem(TOKEN_KEY, t); },
  clear() { sessionStorage.removeItem(TOKEN_KEY); },
  // The token's claims, read for the page's sake only (which buttons to
  // show): the API checks the token on every call.
  claims() {
    try {
      const p = this.token.split(".")[1].replace(/-/g, "+").replace(/_/g, "/");
      const c = JSON.parse(atob(p));
      return { agent: String(c.sub ?? ""), owner: String(c.owner_id ?? ""), roles: Array.isArray(c.roles) ? c.roles.map(String) : [] };
    } catch {
      return { agent: "", owner: "", roles: [] };
    }
  },
  can(role) {
    const r = this.claims().roles;
    return r.includes(role) || r.includes("curator");
  },
};

class APIError extends Error {
  constructor(status, code, message, body) {
    super(message);
    this.status = status;
    this.code = code;
    this.body = body;
  }
}

async function api(method, path, { body, headers, keepOn401 } = {}) {
  const hs = { Accept: "application/json", ...headers };
  if (auth.token) hs.Authorization = "Bearer " + auth.token;
  if (body !== undefined) hs["Content-Type"] = "application/json";
  const resp = await fetch(path, { method, headers: hs, body: body === undefined ? undefined : JSON.stringify(body), cache: "no-store", credentials: "omit" });
  let json = null;
  if (resp.status !== 204) {
    try { json = await resp.json(); } catch { json = null; }
  }
  if (!resp.ok) {
    const e = json && json.error ? json.error : {};
    const err = new APIError(resp.status, String(e.code ?? ""), String(e.message ?? resp.statusText), json);
    if (resp.status === 401 && !keepOn401) {
      signOut("The server refused the token: " + err.message);
    }
    throw err;
  }
  return { json, etag: resp.headers.get("ETag") };
}

function q(params) {
  const u = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== "") u.append(k, v);
  const s = u.toString();
  return s ? "?" + s : "";
}

// --- sign-in ----------------------------------------------------------------

function renderSignIn(message) {
  const input = h("input", { id: "token", type: "password", autocomplete: "off", required: true, spellcheck: "false", "aria-describedby": "token-help" });
  const err = h("p", { id: "signin-error", class: "error", role: "alert" }, message || "");
  const form = h("form", { id: "signin", class: "row", "aria-label": "Sign in with a token" },
    h("label", { for: "token", class: "wide" }, "Bearer token", input),
    h("button", { type: "submit", class: "primary" }, "Sign in"));
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const t = input.value.trim();
    if (!t) return;
    auth.set(t);
    try {
      await api("GET", "/breadcrumbs" + q({ limit: 1 }), { keepOn401: true });
    } catch (e) {
      auth.clear();
      err.textContent = show("Sign-in failed: " + e.message);
      return;
    }
    signedIn();
  });
  page("Sign in", form,
    h("p", { id: "token-help", class: "muted" },
      "Paste a token from 'ctxkit token', or open a login link from 'ctxkit token --console'. The token stays in this tab only."),
    err);
  setChrome();
}

async function loginWithCode(code) {
  // The code leaves the address bar at once: it is spent by this exchange.
  history.replaceState(null, "", location.pathname + "#/");
  try {
    const { json } = await api("POST", "/console/login", { body: { code }, keepOn401: true });
    auth.set(json.token);
    signedIn();
  } catch (e) {
    renderSignIn("The login link did not work: " + e.message);
  }
}

function signedIn() {
  setChrome();
  live.start();
  if (location.hash === "" || location.hash === "#/" || location.hash.startsWith("#login=")) {
    history.replaceState(null, "", location.pathname + "#/");
  }
  route();
}

function signOut(message) {
  auth.clear();
  live.stop();
  renderSignIn(message);
}

function setChrome() {
  const on = !!auth.token;
  $("nav").hidden = !on;
  $("signout").hidden = !on;
  const c = on ? auth.claims() : null;
  $("who").textContent = c ? show(`${c.agent} @ ${c.owner} · ${c.roles.join(", ")}`) : "";
}

// --- live events ----------------------------------------------------------

// live reads /events/stream with fetch (EventSource cannot send the
// Authorization header), and after a drop resumes from the last event
// seen with Last-Event-ID. Listeners hear every change.
const live = {
  ctl: null,
  last: "",
  listeners: new Set(),
  state: "off",
  start() {
    if (this.ctl) return;
    this.ctl = new AbortController();
    this.run(this.ctl.signal);
  },
  stop() {
    if (this.ctl) this.ctl.abort();
    this.ctl = null;
    this.last = "";
    this.set("off");
  },
  set(state) {
    this.state = state;
    const el = $("live");
    if (el) el.textContent = state === "on" ? "Live updates on" : state === "off" ? "" : "Reconnecting to live updates…";
  },
  async run(signal) {
    let wait = 500;
    while (!signal.aborted && auth.token) {
      try {
        const hs = { Authorization: "Bearer " + auth.token, Accept: "text/event-stream" };
        if (this.last) hs["Last-Event-ID"] = this.last;
        const resp = await fetch("/events/stream", { headers: hs, signal, cache: "no-store", credentials: "omit" });
        if (resp.status === 401) { signOut("The server refused the token."); return; }
        if (resp.status === 403) { this.set("off"); return; } // a token without the subscriber role
        if (!resp.ok || !resp.body) throw new Error("stream " + resp.status);
        this.set("on");
        wait = 500;
        await this.read(resp.body, signal);
      } catch (e) {
        if (signal.aborted) return;
      }
      this.set("retry");
      await new Promise((r) => setTimeout(r, wait));
      wait = Math.min(wait * 2, 10000);
    }
  },
  async read(body, signal) {
    const reader = body.pipeThrough(new TextDecoderStream()).getReader();
    let buf = "";
    let ev = { id: "", event: "", data: "" };
    while (!signal.aborted) {
      const { value, done } = await reader.read();
      if (done) return;
      buf += value;
      if (buf.length > 1 << 20) throw new Error("event too large");
      let nl;
      while ((nl = buf.indexOf("\n")) >= 0) {
        const line = buf.slice(0, nl).replace(/\r$/, "");
        buf = buf.slice(nl + 1);
        if (line === "") {
          if (ev.data !== "" || ev.event) this.dispatch(ev);
          ev = { id: "", event: "", data: "" };
          continue;
        }
        if (line.startsWith(":")) continue;
        const i = line.indexOf(":");
        const field = i < 0 ? line : line.slice(0, i);
        const val = i < 0 ? "" : line.slice(i + 1).replace(/^ /, "");
        if (field === "id") ev.id = val;
        else if (field === "event") ev.event = val;
        else if (field === "data") ev.data += (ev.data ? "\n" : "") + val;
      }
    }
  },
  dispatch(ev) {
    if (ev.id && /^\d+$/.test(ev.id)) this.last = ev.id;
    if (ev.event === "ping") return;
    let d;
    try { d = JSON.parse(ev.data); } catch { return; }
    for (const f of this.listeners) f(d);
  },
};

// --- the list ---------------------------------------------------------------

const list = { q: "", tag: "", schema: "", cursors: [""], pending: null };

function renderList() {
  const search = h("input", { id: "q", type: "search", value: list.q, "aria-describedby": "q-help" });
  const tag = h("input", { id: "tag", value: list.tag });
  const schema = h("input", { id: "schema", value: list.schema });
  const form = h("form", { id: "filters", class: "row", role: "search", "aria-label": "Filter breadcrumbs" },
    h("label", { for: "q", class: "wide" }, "Search", search),
    h("label", { for: "tag" }, "Tag", tag),
    h("label", { for: "schema" }, "Schema", schema),
    h("button", { type: "submit", class: "primary" }, "Apply"),
    h("button", { type: "button", id: "clear", onclick: () => { list.q = list.tag = list.schema = ""; list.cursors = [""]; renderList(); } }, "Clear"));
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    list.q = search.value.trim();
    list.tag = tag.value.trim();
    list.schema = schema.value.trim();
    list.cursors = [""];
    loadList();
  });
  const table = h("table", { id: "crumbs", "aria-describedby": "list-status" },
    h("caption", { class: "muted", id: "list-status", "aria-live": "polite" }, "Loading…"),
    h("thead", {}, h("tr", {},
      h("th", { scope: "col" }, "Title"), h("th", { scope: "col" }, "Tags"), h("th", { scope: "col", class: "opt" }, "Schema"),
      h("th", { scope: "col", class: "num" }, "Version"), h("th", { scope: "col", class: "opt" }, "Updated"), h("th", { scope: "col", class: "num opt" }, "Size"))),
    h("tbody", { id: "rows" }));
  const pager = h("nav", { class: "pager", "aria-label": "Pages" },
    h("button", { type: "button", id: "first", onclick: () => { list.cursors = [""]; loadList(); } }, "First page"),
    h("button", { type: "button", id: "next", onclick: () => { loadList(list.next); } }, "Next page"),
    h("span", { id: "page-no", class: "muted" }));
  page("Breadcrumbs", form,
    h("p", { id: "q-help", class: "muted" }, "Search words match titles, tags, descriptions and what the model sees."),
    h("p", { id: "live", class: "live", "aria-live": "off" }), table, pager);
  live.set(live.state);
  loadList();
}

let listSeq = 0;

async function loadList(cursor) {
  const seq = ++listSeq;
  if (cursor) list.cursors.push(cursor);
  const at = list.cursors[list.cursors.length - 1];
  const t0 = performance.now();
  let items, next = "";
  try {
    if (list.q) {
      const { json } = await api("GET", "/breadcrumbs/search" + q({ q: list.q, tag: list.tag, schema_name: list.schema, limit: 100 }));
      items = json.items || [];
    } else {
      const { json } = await api("GET", "/breadcrumbs" + q({ limit: PAGE, include_context: "true", tag: list.tag, schema_name: list.schema, cursor: at }));
      items = json.items || [];
      next = json.next_cursor || "";
    }
  } catch (e) {
    if (seq === listSeq && $("list-status")) $("list-status").textContent = show("Could not load: " + e.message);
    return;
  }
  if (seq !== listSeq || !$("rows")) return; // a newer load, or another page
  list.next = next;
  const rows = items.map((b) => {
    const size = b.context === undefined ? 0 : new TextEncoder().encode(JSON.stringify(b.context)).length;
    return h("tr", { "data-id": b.id },
      h("td", { class: "title" }, h("a", { href: "#/b/" + encodeURIComponent(b.id), class: "crumb" }, data(b.title || "(untitled)"))),
      h("td", { class: "tags" }, (b.tags || []).map((t) => h("span", { class: "tag" }, show(t)))),
      h("td", { class: "opt" }, data(b.schema_name || "")),
      h("td", { class: "num" }, String(b.version)),
      h("td", { class: "opt" }, h("time", { datetime: b.updated_at }, when(b.updated_at))),
      h("td", { class: "num opt" }, bytes(size)));
  });
  $("rows").replaceChildren(...rows);
  $("next").disabled = !next;
  $("first").disabled = list.cursors.length <= 1;
  $("page-no").textContent = list.q ? "" : "Page " + list.cursors.length;
  const what = list.q ? `${items.length} found for “${show(list.q)}”` : `${items.length} shown`;
  $("list-status").textContent = what;
  // Marks for whoever measures the page (the tests read them).
  performance.clearMarks("list-rendered");
  performance.mark("list-rendered", { detail: { ms: performance.now() - t0, search: !!list.q } });
  $("crumbs").dataset.loadedMs = String(Math.round(performance.now() - t0));
  $("crumbs").dataset.loads = String(Number($("crumbs").dataset.loads || 0) + 1);
}

// A change refreshes the list when it shows the newest (first page, no
// search): at most one load in flight and one more queued, however fast
// the changes come.
let refreshing = false, again = false;
live.listeners.add(() => {
  if (!$("rows") || list.q || list.cursors.length > 1) return;
  if (refreshing) { again = true; return; }
  refreshing = true;
  setTimeout(async () => {
    do { again = false; await loadList(); } while (again && $("rows"));
    refreshing = false;
  }, 150);
});

// --- a breadcrumb -----------------------------------------------------------

async function renderRecord(id) {
  page("Breadcrumb", h("p", { class: "muted" }, "Loading…"));
  let full, viewed, stats;
  try {
    const p = "/breadcrumbs/" + encodeURIComponent(id);
    [full, viewed, stats] = await Promise.all([api("GET", p + "/full"), api("GET", p), api("GET", p + "/stats")]);
  } catch (e) {
    page("Breadcrumb", h("p", { class: "error", role: "alert" }, "Could not load the breadcrumb: " + e.message),
      h("p", {}, h("a", { href: "#/" }, "Back to the list")));
    return;
  }
  const b = full.json, v = viewed.json, s = stats.json;
  const meta = v.meta || {};
  const status = String(meta.status || "");
  const children = [
    h("p", {}, h("a", { href: "#/" }, "← All breadcrumbs")),
    h("p", { id: "meta" },
      "View status: ", h("span", { id: "view-status", class: "status-" + (status === "OK" ? "OK" : "FALLBACK") }, status),
      status !== "OK" && meta.message ? h("span", { id: "view-reason" }, " — ", data(meta.message), meta.error_code ? " (" + meta.error_code + ")" : "") : null,
      " · version ", String(b.version), " · tags ", (b.tags || []).map((t) => h("span", { class: "tag" }, show(t))),
      b.schema_name ? [" · schema ", data(b.schema_name)] : null),
    h("div", { class: "counts", id: "counts", "aria-label": "Token counts" },
      h("span", {}, "Model's view: ", h("strong", { id: "view-tokens" }, String(s.tokens_after)), " tokens"),
      h("span", {}, "Full context: ", h("strong", { id: "full-tokens" }, String(s.tokens_before)), " tokens"),
      h("span", {}, "Saves: ", h("strong", { id: "saved" }, String(s.saved_percent) + "%")),
      h("span", { class: "muted" }, "(" + s.encoding + ")")),
    h("div", { class: "panes" },
      h("section", { class: "pane", "aria-labelledby": "view-h" }, h("h2", { id: "view-h" }, "What the model sees"),
        h("pre", { id: "view-json", tabindex: "0", "aria-labelledby": "view-h" }, JSON.stringify(v.context, null, 2))),
      h("section", { class: "pane", "aria-labelledby": "full-h" }, h("h2", { id: "full-h" }, "Full record"),
        h("pre", { id: "full-json", tabindex: "0", "aria-labelledby": "full-h" }, JSON.stringify(b, null, 2)))),
  ];
  children.push(playground(b));
  if (auth.can("emitter")) children.push(editor(b));
  if (auth.can("curator")) children.push(deleter(b));
  page(b.title || "(untitled)", ...children);
}

function editor(b) {
  const title = h("input", { id: "edit-title", value: b.title || "" });
  const tags = h("input", { id: "edit-tags", value: (b.tags || []).join(", "), "aria-describedby": "tags-help" });
  const ctx = h("textarea", { id: "edit-context", spellcheck: "false" });
  ctx.value = JSON.stringify(b.context, null, 2);
  const msg = h("div", { id: "edit-msg", role: "status" });
  let version = b.version;
  const save = async (ifMatch) => {
    let context;
    try { context = JSON.parse(ctx.value); } catch (e) {
      msg.replaceChildren(h("p", { class: "error" }, "context is not JSON: " + e.message));
      ctx.focus();
      return;
    }
    const body = { title: title.value, tags: tags.value.split(",").map((t) => t.trim()).filter(Boolean), context };
    try {
      await api("PATCH", "/breadcrumbs/" + encodeURIComponent(b.id), { body, headers: { "If-Match": '"' + ifMatch + '"' } });
      msg.replaceChildren(h("p", {}, "Saved."));
      renderRecord(b.id);
    } catch (e) {
      if (e.status === 412) return conflict(e);
      msg.replaceChildren(h("p", { class: "error", role: "alert" }, "Not saved: " + e.message));
    }
  };
  const conflict = async () => {
    let cur;
    try { cur = (await api("GET", "/breadcrumbs/" + encodeURIComponent(b.id) + "/full")).json; } catch (e) {
      msg.replaceChildren(h("p", { class: "error", role: "alert" }, "Not saved, and the current version could not be read: " + e.message));
      return;
    }
    const changed = [];
    if (cur.title !== b.title) changed.push(h("li", {}, "title: ", data(b.title), " → ", data(cur.title)));
    if (JSON.stringify(cur.tags) !== JSON.stringify(b.tags)) changed.push(h("li", {}, "tags: ", data((b.tags || []).join(", ")), " → ", data((cur.tags || []).join(", "))));
    if (JSON.stringify(cur.context) !== JSON.stringify(b.context)) changed.push(h("li", {}, "context changed"));
    const box = h("div", { id: "conflict", class: "notice bad", role: "alert" },
      h("p", {}, `Someone saved this breadcrumb since you opened it: it is now at version ${cur.version}, not ${version}.`),
      h("ul", {}, changed),
      h("pre", { id: "conflict-json" }, JSON.stringify({ title: cur.title, tags: cur.tags, context: cur.context }, null, 2)),
      h("div", { class: "row" },
        h("button", { type: "button", id: "reload", onclick: () => renderRecord(b.id) }, "Reload theirs (drop my edits)"),
        h("button", { type: "button", id: "overwrite", class: "danger", onclick: () => save(cur.version) }, "Overwrite with mine")));
    msg.replaceChildren(box);
    $("reload").focus();
  };
  const form = h("form", { id: "edit", class: "edit", "aria-labelledby": "edit-h" },
    h("h2", { id: "edit-h" }, "Edit"),
    h("label", { for: "edit-title" }, "Title", title),
    h("label", { for: "edit-tags" }, "Tags (comma-separated)", tags),
    h("label", { for: "edit-context" }, "Context (JSON)", ctx),
    h("div", { class: "row" }, h("button", { type: "submit", class: "primary", id: "save" }, "Save")),
    msg);
  form.addEventListener("submit", (ev) => { ev.preventDefault(); save(version); });
  return form;
}

// lineOf is the 1-based line of a character offset in text.
function lineOf(text, offset) {
  return text.slice(0, Math.max(0, offset)).split("\n").length;
}

// jsonFault returns the offset of the first syntax error in JSON text
// (the browser's JSON.parse message does not always say where), or -1.
function jsonFault(t) {
  let i = 0;
  const ws = () => { while (i < t.length && " \t\n\r".includes(t[i])) i++; };
  const fail = () => { throw i; };
  const lit = (w) => { if (t.startsWith(w, i)) i += w.length; else fail(); };
  const str = () => {
    if (t[i] !== '"') fail();
    for (i++; i < t.length && t[i] !== '"'; i++) {
      if (t[i] < " ") fail();
      if (t[i] === "\\") i++;
    }
    if (i >= t.length) fail();
    i++;
  };
  const numRe = /-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?/y;
  const num = () => { numRe.lastIndex = i; const m = numRe.exec(t); if (!m) fail(); i += m[0].length; };
  const val = (depth) => {
    if (depth > 256) fail();
    ws();
    const c = t[i];
    if (c === "{" || c === "[") {
      const close = c === "{" ? "}" : "]";
      i++; ws();
      if (t[i] === close) { i++; return; }
      for (;;) {
        if (c === "{") { ws(); str(); ws(); if (t[i] !== ":") fail(); i++; }
        val(depth + 1); ws();
        if (t[i] === ",") { i++; continue; }
        if (t[i] === close) { i++; return; }
        fail();
      }
    }
    if (c === '"') return str();
    if (c === "t") return lit("true");
    if (c === "f") return lit("false");
    if (c === "n") return lit("null");
    num();
  };
  try { val(0); ws(); if (i < t.length) fail(); return -1; } catch (e) { if (typeof e === "number") return e; throw e; }
}

// playground previews llm_hints against the record's context as they are
// typed (POST /views/preview, debounced), and saves them.
function playground(b) {
  const hints = h("textarea", { id: "hints", spellcheck: "false", "aria-describedby": "hints-problem" });
  hints.value = JSON.stringify(b.llm_hints ?? { exclude: [] }, null, 2);
  const problem = h("div", { id: "hints-problem", role: "alert" });
  const warnings = h("ul", { id: "hints-warnings", "aria-label": "Warnings" });
  const out = h("pre", { id: "preview-json", tabindex: "0", "aria-label": "Preview of the view" });
  const status = h("p", { id: "preview-status", class: "muted", "aria-live": "polite" });
  let seq = 0, timer = 0;
  const fail = (line, rule, message) => {
    problem.replaceChildren(h("p", { class: "error" },
      line ? h("span", { id: "hints-line" }, "line " + line) : null, line ? ", " : "",
      rule ? ["rule ", h("code", { id: "hints-rule" }, rule), ": "] : null, message));
    status.textContent = "Preview not updated.";
  };
  const preview = async () => {
    const n = ++seq;
    const text = hints.value;
    let parsed;
    try { parsed = JSON.parse(text); } catch (e) {
      const at = jsonFault(text);
      return fail(at >= 0 ? lineOf(text, at + 1) : 0, "", "not JSON: " + e.message);
    }
    status.textContent = "Previewing…";
    try {
      const { json } = await api("POST", "/views/preview", { body: { llm_hints: parsed, context: b.context, id: b.id,
        title: b.title, description: b.description, tags: b.tags, schema_name: b.schema_name, version: b.version } });
      if (n !== seq) return;
      problem.replaceChildren();
      out.textContent = JSON.stringify(json.context, null, 2);
      const meta = json.meta || {};
      status.textContent = show(`Status ${meta.status}` + (meta.message ? ` — ${meta.message}` : "") +
        ` · ${new TextEncoder().encode(JSON.stringify(json.context)).length} bytes`);
      warnings.replaceChildren(...(meta.warnings || []).map((w) => h("li", {}, h("code", {}, w.path), ": ", w.message)));
    } catch (e) {
      if (n !== seq) return;
      // The message names the rule at fault (llm_hints.transform.NAME…):
      // its line is where that rule's name is written.
      const m = /^llm_hints((?:\.[^.:\s]+)+)/.exec(e.message);
      const rule = m ? m[1].slice(1) : "";
      let line = 0;
      if (rule) {
        let at = 0;
        for (const part of rule.split(".")) {
          const i = text.indexOf(JSON.stringify(part), at);
          if (i >= 0) at = i;
        }
        line = lineOf(text, at);
      }
      fail(line, rule, e.message);
    }
  };
  hints.addEventListener("input", () => { clearTimeout(timer); timer = setTimeout(preview, 300); });
  const save = h("button", { type: "button", id: "save-hints", class: "primary", onclick: async () => {
    let parsed;
    try { parsed = JSON.parse(hints.value); } catch (e) { return fail(0, "", "not JSON: " + e.message); }
    try {
      await api("PATCH", "/breadcrumbs/" + encodeURIComponent(b.id), { body: { llm_hints: parsed }, headers: { "If-Match": '"' + b.version + '"' } });
      renderRecord(b.id);
    } catch (e) {
      fail(0, "", e.status === 412 ? "Not saved: someone changed the breadcrumb since it was opened; reload it." : "Not saved: " + e.message);
    }
  } }, "Save hints");
  setTimeout(preview, 0);
  return h("section", { class: "edit", id: "playground", "aria-labelledby": "play-h" },
    h("h2", { id: "play-h" }, "View playground"),
    h("div", { class: "panes" },
      h("div", {}, h("label", { for: "hints" }, "llm_hints (JSON)", hints), problem, auth.can("emitter") ? save : null),
      h("div", { class: "pane" }, h("h2", {}, "Preview"), status, warnings, out)));
}

function deleter(b) {
  const area = h("div", { class: "row", id: "delete-area" });
  const ask = () => area.replaceChildren(
    h("span", { role: "alert" }, "Delete this breadcrumb? Its history stays."),
    h("button", { type: "button", id: "delete-confirm", class: "danger", onclick: async () => {
      try {
        await api("DELETE", "/breadcrumbs/" + encodeURIComponent(b.id));
        location.hash = "#/";
      } catch (e) {
        area.replaceChildren(h("p", { class: "error", role: "alert" }, "Not deleted: " + e.message));
      }
    } }, "Delete for good"),
    h("button", { type: "button", id: "delete-cancel", onclick: () => { area.replaceChildren(start()); $("delete").focus(); } }, "Cancel"));
  const start = () => h("button", { type: "button", id: "delete", class: "danger", onclick: () => { ask(); $("delete-confirm").focus(); } }, "Delete…");
  area.append(start());
  return area;
}

// --- routing -------------------------------------------------------------

function route() {
  const hash = location.hash;
  if (hash.startsWith("#login=")) return loginWithCode(decodeURIComponent(hash.slice(7)));
  if (!auth.token) return renderSignIn();
  const m = /^#\/b\/(.+)$/.exec(hash);
  if (m) return renderRecord(decodeURIComponent(m[1]));
  return renderList();
}

window.addEventListener("hashchange", route);
$("signout").addEventListener("click", () => signOut("Signed out."));
if (auth.token) { setChrome(); live.start(); }
route();
