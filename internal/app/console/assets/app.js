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
  stopEvents();
  renderSignIn(message);
}

function setChrome() {
  const on = !!auth.token;
  $("nav").hidden = !on;
  $("signout").hidden = !on;
  const c = on ? auth.claims() : null;
  $("who").textContent = c ? show(`${c.agent} @ ${c.owner} · ${c.roles.join(", ")}`) : "";
}

// --- event streams ---------------------------------------------------------

// Feed reads /events/stream with fetch (EventSource cannot send the
// Authorization header), and after a drop resumes from the last event
// seen with Last-Event-ID. query is the stream's own query string (a
// selector); listeners hear every change it sends; onState hears "on",
// "off", "retry", "forbidden" (a token without the subscriber role) and
// "refused" (with the API's error: a selector the server turned down,
// which no retry would mend).
class Feed {
  constructor(query, onState) {
    this.query = query || "";
    this.onState = onState || (() => {});
    this.ctl = null;
    this.last = "";
    this.state = "off";
    this.listeners = new Set();
  }
  start() {
    if (this.ctl) return;
    this.ctl = new AbortController();
    this.run(this.ctl.signal);
  }
  stop() {
    if (this.ctl) this.ctl.abort();
    this.ctl = null;
    this.last = "";
    this.set("off");
  }
  set(state, err) {
    this.state = state;
    this.onState(state, err);
  }
  async run(signal) {
    let wait = 500;
    while (!signal.aborted && auth.token) {
      try {
        const hs = { Authorization: "Bearer " + auth.token, Accept: "text/event-stream" };
        if (this.last) hs["Last-Event-ID"] = this.last;
        const resp = await fetch("/events/stream" + this.query, { headers: hs, signal, cache: "no-store", credentials: "omit" });
        if (resp.status === 401) { signOut("The server refused the token."); return; }
        if (resp.status === 403) { this.set("forbidden"); return; } // a token without the subscriber role
        if (resp.status === 400) {
          let e = {};
          try { e = (await resp.json()).error || {}; } catch { e = {}; }
          this.set("refused", new APIError(400, String(e.code ?? ""), String(e.message ?? "the stream was refused"), { error: e }));
          return;
        }
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
  }
  // read parses the stream as it arrives. The bytes are decoded here
  // rather than through a TextDecoderStream, whose pipe costs the main
  // thread a few more promise turns for every chunk, and each chunk's
  // lines are cut from it in one pass: at hundreds of events a second
  // this is most of what the stream costs the page.
  async read(body, signal) {
    const reader = body.getReader();
    const dec = new TextDecoder();
    let buf = "";
    let ev = { id: "", event: "", data: "" };
    while (!signal.aborted) {
      const { value, done } = await reader.read();
      if (done) return;
      buf += dec.decode(value, { stream: true });
      if (buf.length > 1 << 20) throw new Error("event too large");
      let from = 0, nl;
      while ((nl = buf.indexOf("\n", from)) >= 0) {
        const line = buf.charCodeAt(nl - 1) === 13 && nl > from ? buf.slice(from, nl - 1) : buf.slice(from, nl);
        from = nl + 1;
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
      buf = buf.slice(from);
    }
  }
  dispatch(ev) {
    if (ev.id && /^\d+$/.test(ev.id)) this.last = ev.id;
    if (ev.event === "ping") return;
    let d;
    try { d = JSON.parse(ev.data); } catch { return; }
    for (const f of this.listeners) f(d);
  }
}

// live is the console's own feed of every change the token may see; the
// list refreshes from it.
const live = new Feed("", (state) => {
  const el = $("live");
  if (el) el.textContent = state === "on" ? "Live updates on" : state === "off" || state === "forbidden" ? "" : "Reconnecting to live updates…";
});

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

// loadList loads and shows a page of the list; live says a change on the
// server asked for it (not the user), so it may reach the screen over a
// few frames. It resolves to the number of rows it had to build (the
// rest were on screen already).
async function loadList(cursor, live = false) {
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
  // A row whose breadcrumb version is on screen already is kept. The new
  // ones (most of them, while changes stream in) are built a few at a
  // time, yielding between, and all go in place together in one frame,
  // where only what moved is touched: no task of the refresh holds the
  // page for long.
  const mode = list.q ? "s:" : "l:";
  const have = new Map();
  for (const tr of $("rows").rows) have.set(tr.dataset.key, tr);
  const rows = [];
  let built = 0;
  for (const b of items) {
    const kept = have.get(mode + b.id + "@" + b.version);
    if (kept) { rows.push(kept); continue; }
    rows.push(listRow(b, mode));
    if (++built % ROWS_PER_TASK === 0) {
      await yieldTask();
      if (seq !== listSeq || !$("rows")) return;
    }
  }
  await frame();
  if (seq !== listSeq || !$("rows")) return;
  // A refresh with many new rows puts them in ROWS_PER_TASK at a frame,
  // top first: laying out new rows is most of what a refresh costs the
  // page (the browser's trace says so), and a frame must not wait for
  // fifty of them. What the user asked for is shown at once.
  if (live) {
    for (let k = ROWS_PER_TASK; k < rows.length; k += ROWS_PER_TASK) {
      const body = $("rows");
      const fresh = rows.slice(0, k).filter((r) => r.parentNode !== body).length;
      if (fresh === 0) continue;
      patchPrefix(body, rows, k);
      await frame();
      if (seq !== listSeq || !$("rows")) return;
    }
  }
  list.next = next;
  const r0 = performance.now();
  const body = $("rows");
  patchChildren(body, rows);
  $("next").disabled = !next;
  $("first").disabled = list.cursors.length <= 1;
  $("page-no").textContent = list.q ? "" : "Page " + list.cursors.length;
  const what = list.q ? `${items.length} found for “${show(list.q)}”` : `${items.length} shown`;
  $("list-status").textContent = what;
  performance.measure("list-render", { start: r0, end: performance.now() });
  // Marks for whoever measures the page (the tests read them).
  performance.clearMarks("list-rendered");
  performance.mark("list-rendered", { detail: { ms: performance.now() - t0, search: !!list.q } });
  $("crumbs").dataset.loadedMs = String(Math.round(performance.now() - t0));
  $("crumbs").dataset.loads = String(Number($("crumbs").dataset.loads || 0) + 1);
  return built;
}

function listRow(b, mode) {
  const size = b.context === undefined ? 0 : new TextEncoder().encode(JSON.stringify(b.context)).length;
  return h("tr", { "data-id": b.id, "data-key": mode + b.id + "@" + b.version },
    h("td", { class: "title" }, h("a", { href: "#/b/" + encodeURIComponent(b.id), class: "crumb" }, data(b.title || "(untitled)"))),
    h("td", { class: "tags" }, (b.tags || []).map((t) => h("span", { class: "tag" }, show(t)))),
    h("td", { class: "opt" }, data(b.schema_name || "")),
    h("td", { class: "num" }, String(b.version)),
    h("td", { class: "opt" }, h("time", { datetime: b.updated_at }, when(b.updated_at))),
    h("td", { class: "num opt" }, bytes(size)));
}

// patchChildren makes el's children want, moving, adding and removing
// only the nodes out of place (a row added on top is one insertion).
function patchChildren(el, want) {
  const keep = new Set(want);
  for (const c of [...el.children]) if (!keep.has(c)) c.remove();
  for (let i = 0; i < want.length; i++) {
    const at = el.children[i];
    if (at !== want[i]) el.insertBefore(want[i], at || null);
  }
}

// patchPrefix puts want's first k nodes first in el, in order, and
// drops nodes from the end past want's length: the step of a refresh
// that reaches the screen over several frames.
function patchPrefix(el, want, k) {
  for (let i = 0; i < k; i++) {
    const at = el.children[i];
    if (at !== want[i]) el.insertBefore(want[i], at || null);
  }
  while (el.children.length > want.length) el.lastElementChild.remove();
}

// ROWS_PER_TASK bounds the rows one task of a list refresh builds, and
// the new rows one frame of a live refresh lays out.
const ROWS_PER_TASK = 10;

// yieldTask lets the page draw and answer input before work goes on.
function yieldTask() {
  return new Promise((resolve) => setTimeout(resolve, 0));
}

// frame resolves at the next animation frame, or after 100 ms in a tab
// that draws none (a hidden one), so work waiting for it never stalls.
function frame() {
  return new Promise((resolve) => {
    let timer = 0;
    const at = requestAnimationFrame(() => { clearTimeout(timer); resolve(); });
    timer = setTimeout(() => { cancelAnimationFrame(at); resolve(); }, 100);
  });
}

// A change refreshes the list when it shows the newest (first page, no
// search): at most one load in flight and one more queued, and loads at
// least REFRESH_GAP ms apart, however fast the changes come — the page
// keeps most frames for drawing and input. A refresh that had to build
// half the page or more (the list turns over faster than anyone reads
// it) waits REFRESH_GAP_BUSY before the next: the rows a refresh builds
// are bounded by the page, so under a flood of changes the work of the
// page (row builds, and above all their layout and paint) falls with
// the refresh rate, while a lone change still shows at once.
const REFRESH_GAP = 250;
const REFRESH_GAP_BUSY = 1000;
let refreshing = false, again = false;
live.listeners.add(() => {
  if (!$("rows") || list.q || list.cursors.length > 1) return;
  if (refreshing) { again = true; return; }
  refreshing = true;
  setTimeout(async () => {
    do {
      again = false;
      const t = performance.now();
      const built = (await loadList(undefined, true)) || 0;
      const gap = built * 2 >= PAGE ? REFRESH_GAP_BUSY : REFRESH_GAP;
      if (again) await new Promise((r) => setTimeout(r, Math.max(0, gap - (performance.now() - t))));
    } while (again && $("rows"));
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
    h("p", { class: "row" }, h("a", { href: "#/" }, "← All breadcrumbs"),
      h("a", { href: "#/b/" + encodeURIComponent(b.id) + "/history", id: "history-link" }, "History and diffs")),
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

// --- history and a JSON diff ----------------------------------------------

// A version's content: what a diff compares. The other fields (version,
// checksum, times, reads, size) change with every write; the version
// picker shows them instead.
const CONTENT = ["title", "description", "semantic_version", "tags", "schema_name", "visibility", "sensitivity",
  "expires_at", "max_reads", "context", "llm_hints"];
const MAX_DIFF = 2000; // changes listed; past it the page says the list stops
const MAX_DIFF_DEPTH = 256;

function content(v) {
  const out = {};
  for (const k of CONTENT) if (v[k] !== undefined && v[k] !== null) out[k] = v[k];
  return out;
}

// pathOf extends a JSON path by a key or an index: a.b, a[2], a["odd key"].
function pathOf(base, key) {
  if (typeof key === "number") return base + "[" + key + "]";
  if (/^[A-Za-z_][A-Za-z0-9_]*$/.test(key)) return base ? base + "." + key : key;
  return base + "[" + JSON.stringify(key) + "]";
}

// jsonDiff lists what changed from a to b, structurally: a path only b
// has is added, one only a has removed; where both hold objects (or both
// arrays) the diff goes inside them, elsewhere a different value is
// changed. Arrays are compared index by index. It stops after limit
// changes and says so (more).
function jsonDiff(a, b, limit = MAX_DIFF) {
  const changes = [];
  let more = false;
  const kind = (v) => (v === null ? "null" : Array.isArray(v) ? "array" : typeof v);
  const note = (c) => {
    if (changes.length >= limit) { more = true; return false; }
    changes.push(c);
    return true;
  };
  const walk = (x, y, path, depth) => {
    if (more) return;
    const kx = kind(x), ky = kind(y);
    if (kx === ky && (kx === "object" || kx === "array") && depth < MAX_DIFF_DEPTH) {
      const keys = kx === "array"
        ? Array.from({ length: Math.max(x.length, y.length) }, (_, i) => i)
        : [...new Set([...Object.keys(x), ...Object.keys(y)])].sort();
      for (const k of keys) {
        const inX = kx === "array" ? k < x.length : Object.hasOwn(x, k);
        const inY = kx === "array" ? k < y.length : Object.hasOwn(y, k);
        const p = pathOf(path, k);
        if (inX && inY) walk(x[k], y[k], p, depth + 1);
        else if (!note(inY ? { op: "added", path: p, to: y[k] } : { op: "removed", path: p, from: x[k] })) return;
      }
      return;
    }
    if (JSON.stringify(x) !== JSON.stringify(y)) note({ op: "changed", path: path || "(the whole record)", from: x, to: y });
  };
  walk(a, b, "", 0);
  return { changes, more };
}

// brief is a value as one line of JSON, cut to n characters.
function brief(v, n = 160) {
  const s = JSON.stringify(v) ?? "null";
  return s.length > n ? s.slice(0, n - 1) + "…" : s;
}

async function renderHistory(id) {
  page("History", h("p", { class: "muted" }, "Loading…"));
  let items;
  try {
    items = (await api("GET", "/breadcrumbs/" + encodeURIComponent(id) + "/history")).json.items || [];
  } catch (e) {
    page("History", h("p", { class: "error", role: "alert" }, "Could not load the history: " + e.message),
      h("p", {}, h("a", { href: "#/" }, "Back to the list")));
    return;
  }
  const back = h("p", {}, h("a", { href: "#/b/" + encodeURIComponent(id) }, "← The breadcrumb"));
  if (items.length === 0) {
    page("History", back, h("p", {}, "No versions."));
    return;
  }
  const byVersion = new Map(items.map((v) => [String(v.version), v]));
  const option = (v) => h("option", { value: String(v.version) }, `version ${v.version} · ${when(v.updated_at)} · ${v.updated_by || ""}`);
  const from = h("select", { id: "diff-from" }, items.map(option));
  const to = h("select", { id: "diff-to" }, items.map(option));
  to.value = String(items[0].version);
  from.value = String(items[Math.min(1, items.length - 1)].version);
  const summary = h("p", { id: "diff-summary", role: "status" });
  const list = h("ul", { id: "diff", class: "diff", "aria-labelledby": "diff-h" });
  const update = () => {
    const a = byVersion.get(from.value), b = byVersion.get(to.value);
    const { changes, more } = jsonDiff(content(a), content(b));
    list.replaceChildren(...changes.map((c) => h("li", { class: "diff-" + c.op, "data-op": c.op, "data-path": c.path },
      h("span", { class: "op" }, c.op), " ", h("code", { class: "path" }, c.path), " ",
      c.op === "added" ? ["= ", h("code", {}, brief(c.to))] : c.op === "removed" ? ["was ", h("code", {}, brief(c.from))]
        : [h("code", {}, brief(c.from)), " → ", h("code", {}, brief(c.to))])));
    const n = (op) => changes.filter((c) => c.op === op).length;
    summary.textContent = changes.length === 0
      ? `Versions ${a.version} and ${b.version} hold the same content.`
      : `From version ${a.version} to ${b.version}: ${n("added")} added, ${n("removed")} removed, ${n("changed")} changed` +
        (more ? ` (the first ${MAX_DIFF} changes are listed)` : "") + ".";
  };
  from.addEventListener("change", update);
  to.addEventListener("change", update);
  const swap = h("button", { type: "button", id: "diff-swap", onclick: () => { [from.value, to.value] = [to.value, from.value]; update(); } }, "Swap");
  page("History of " + (items[0].title || "(untitled)"), back,
    h("p", { class: "muted" }, `${items.length} versions, newest first. The diff compares content: title, tags, schema, context, hints and settings.`),
    h("form", { id: "diff-pick", class: "row", "aria-label": "Versions to compare" },
      h("label", { for: "diff-from" }, "From", from), h("label", { for: "diff-to" }, "To", to), swap),
    h("h2", { id: "diff-h" }, "What changed"), summary, list);
  update();
}

// --- events ---------------------------------------------------------------

const EVENT_ROWS = 200;   // rows the feed keeps on screen
const EVENT_HELD = 1000;  // changes kept while paused; older ones are dropped and counted
const EVENT_NAMES = 2000; // breadcrumbs whose titles and agents are remembered
const LOOKUPS = 2;        // title look-ups in flight at once

const events = { tag: "", schema: "", feed: null, paused: false, held: [], dropped: 0, queue: [], frame: 0,
  names: new Map(), wanted: new Set(), inFlight: 0 };

function stopEvents() {
  if (events.feed) events.feed.stop();
  events.feed = null;
  events.queue = [];
  events.held = [];
  events.dropped = 0;
  events.paused = false;
  events.wanted.clear();
}

// eventSelector is the stream's selector for the filters: every tag
// given, and the schema (a name or "prefix.*").
function eventSelector() {
  const sel = {};
  if (events.tag) sel.all_tags = [events.tag];
  if (events.schema) sel.schema_name = events.schema;
  return Object.keys(sel).length ? "?" + new URLSearchParams({ selector: JSON.stringify(sel) }) : "";
}

function renderEvents() {
  stopEvents();
  const tag = h("input", { id: "ev-tag", value: events.tag, "aria-describedby": "ev-problem" });
  const schema = h("input", { id: "ev-schema", value: events.schema, "aria-describedby": "ev-problem ev-schema-help" });
  const problem = h("p", { id: "ev-problem", class: "error", role: "alert" });
  const state = h("p", { id: "ev-state", class: "live", role: "status" });
  const pause = h("button", { type: "button", id: "ev-pause", "aria-pressed": "false" }, "Pause");
  const form = h("form", { id: "ev-filters", class: "row", role: "search", "aria-label": "Filter events" },
    h("label", { for: "ev-tag" }, "Tag", tag),
    h("label", { for: "ev-schema" }, "Schema", schema),
    h("button", { type: "submit", class: "primary" }, "Apply"), pause);
  const say = () => {
    if (events.paused) {
      state.textContent = `Paused: ${events.held.length} changes waiting` + (events.dropped ? `, ${events.dropped} older ones dropped` : "") + ".";
      return;
    }
    const st = events.feed ? events.feed.state : "off";
    state.textContent = st === "on" ? "Live: changes appear as they happen." : st === "retry" ? "Reconnecting…" : st === "refused" ? "Not watching: fix the filter."
      : st === "forbidden" ? "Not watching: the event stream needs a token with the subscriber role." : "Not watching.";
  };
  const start = () => {
    for (const el of [tag, schema]) el.removeAttribute("aria-invalid");
    problem.textContent = "";
    events.feed = new Feed(eventSelector(), (st, err) => {
      if (st === "refused") {
        // The selector's error names its part: all_tags is the tag
        // field's, schema_name the schema's.
        const at = /^selector\.schema_name/.test(err.message) ? schema : tag;
        at.setAttribute("aria-invalid", "true");
        problem.textContent = show((at === schema ? "Schema: " : "Tag: ") + err.message);
        at.focus();
      }
      if ($("ev-state") === state) say();
    });
    events.feed.listeners.add(eventArrived);
    events.feed.start();
  };
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    stopEvents();
    pause.setAttribute("aria-pressed", "false");
    pause.textContent = "Pause";
    events.tag = tag.value.trim();
    events.schema = schema.value.trim();
    $("ev-rows").replaceChildren();
    start();
    say();
  });
  pause.addEventListener("click", () => {
    events.paused = !events.paused;
    pause.setAttribute("aria-pressed", String(events.paused));
    pause.textContent = events.paused ? "Resume" : "Pause";
    if (!events.paused) {
      events.queue.push(...events.held);
      events.held = [];
      events.dropped = 0;
      flushSoon();
    }
    say();
  });
  page("Events", form,
    h("p", { id: "ev-schema-help", class: "muted" }, "A schema name, or a prefix such as billing.* for every schema under it. Tag and schema must both match."),
    problem, state,
    h("table", { id: "events", "aria-describedby": "ev-state" },
      h("caption", { class: "muted" }, `Changes the token may see, newest first (the last ${EVENT_ROWS}).`),
      h("thead", {}, h("tr", {}, h("th", { scope: "col", class: "opt" }, "When"), h("th", { scope: "col" }, "Kind"),
        h("th", { scope: "col" }, "Title"), h("th", { scope: "col" }, "Agent"), h("th", { scope: "col", class: "num" }, "Version"),
        h("th", { scope: "col", class: "opt" }, "Breadcrumb"))),
      h("tbody", { id: "ev-rows" })));
  start();
  say();
}

function eventArrived(d) {
  if (events.paused) {
    events.held.push(d);
    if (events.held.length > EVENT_HELD) { events.held.shift(); events.dropped++; }
    const st = $("ev-state");
    if (st && events.held.length % 10 === 1) st.textContent = `Paused: ${events.held.length} changes waiting.`;
    return;
  }
  events.queue.push(d);
  if (events.queue.length > EVENT_ROWS) events.queue.splice(0, events.queue.length - EVENT_ROWS);
  flushSoon();
}

// flushSoon puts the changes that came since the last frame on the page in
// the next one, together: however fast they come, a frame does one
// insertion of at most EVENT_ROWS rows.
function flushSoon() {
  if (events.frame) return;
  events.frame = requestAnimationFrame(() => {
    events.frame = 0;
    const body = $("ev-rows");
    const batch = events.queue.splice(0);
    if (!body || batch.length === 0) return;
    const frag = document.createDocumentFragment();
    for (let i = batch.length - 1; i >= 0; i--) frag.append(eventRow(batch[i]));
    body.prepend(frag);
    while (body.rows.length > EVENT_ROWS) body.lastElementChild.remove();
    lookUpNames();
  });
}

function eventRow(d) {
  const id = String(d.id ?? "");
  const tr = h("tr", { "data-id": id, "data-version": String(d.version ?? ""), "data-kind": String(d.kind ?? ""), "data-seen": String(performance.now()) },
    h("td", { class: "opt" }, h("time", { datetime: d.at }, when(d.at))),
    h("td", {}, h("span", { class: "kind kind-" + (/^[a-z]+$/.test(d.kind) ? d.kind : "other") }, String(d.kind ?? ""))),
    h("td", { class: "title" }, h("a", { href: "#/b/" + encodeURIComponent(id), class: "ev-link" }, h("span", { class: "ev-title muted" }, "…"))),
    h("td", { class: "ev-agent" }, ""),
    h("td", { class: "num" }, String(d.version ?? "")),
    h("td", { class: "opt" }, h("code", {}, id)));
  nameRow(tr);
  return tr;
}

// nameRow fills a row's title and agent from what is known of its
// breadcrumb's versions, or asks for them.
function nameRow(tr) {
  const known = events.names.get(tr.dataset.id);
  if (!known) { events.wanted.add(tr.dataset.id); return; }
  const link = tr.querySelector(".ev-link");
  if (known.error || known.versions.length === 0) {
    link.replaceChildren(h("span", { class: "muted" }, "(" + (known.error || "not readable") + ")"));
    link.setAttribute("aria-label", "breadcrumb " + tr.dataset.id);
    return;
  }
  const v = Number(tr.dataset.version);
  // A history read before the change came may not hold its version yet:
  // read it again. One read after it came is the answer, whatever it
  // holds (a version the token may not see is not in it).
  if (v > known.newest && known.started < Number(tr.dataset.seen)) { events.wanted.add(tr.dataset.id); return; }
  // The version the change made, else the newest before it.
  let at = null;
  for (const x of known.versions) if (x.version <= v && (!at || x.version > at.version)) at = x;
  at = at || known.versions[0];
  link.replaceChildren(data(at.title || "(untitled)"));
  tr.querySelector(".ev-agent").replaceChildren(data(at.agent));
}

// lookUpNames reads the history of breadcrumbs on screen whose titles are
// not known, a few at a time: the history is readable after a delete (by
// curators) and names every version's title and agent, and reading it
// spends no read budget of the record.
function lookUpNames() {
  while (events.inFlight < LOOKUPS && events.wanted.size > 0) {
    const id = events.wanted.values().next().value;
    events.wanted.delete(id);
    const body = $("ev-rows");
    if (!body || !body.querySelector(`tr[data-id="${CSS.escape(id)}"]`)) continue;
    events.inFlight++;
    const started = performance.now();
    api("GET", "/breadcrumbs/" + encodeURIComponent(id) + "/history").then(({ json }) => {
      const versions = (json.items || []).map((b) => ({ version: Number(b.version), title: String(b.title ?? ""), agent: String(b.updated_by ?? "") }));
      return { versions, newest: Math.max(0, ...versions.map((x) => x.version)), started };
    }, (e) => ({ error: e.status === 404 ? "gone" : "not readable", versions: [], newest: Infinity, started })).then((known) => {
      events.inFlight--;
      if (events.names.size >= EVENT_NAMES) events.names.clear();
      events.names.set(id, known);
      const body = $("ev-rows");
      if (body) for (const tr of body.querySelectorAll(`tr[data-id="${CSS.escape(id)}"]`)) nameRow(tr);
      lookUpNames();
    });
  }
}

// --- relay playground -------------------------------------------------------

const RELAY_PIPELINE = { transformers: [{ type: "redactor", emails: true }, { type: "context_injector", include_memory: false }] };
const RELAY_CONTEXT = {
  source_agent: "planner", target_agent: "coder", task: "Fix the login bug",
  constraints: ["touch only auth/"],
  prompts: [
    { id: "role", position: "system", content: "You fix bugs in Go code." },
    { id: "ask", position: "user", content: "Fix auth/login.go; mail ops@example.com if stuck." },
  ],
};

const relayForm = { pipeline: JSON.stringify(RELAY_PIPELINE, null, 2), context: JSON.stringify(RELAY_CONTEXT, null, 2), assemble: false };

// faultLine is the line of the text where the part of a JSON document an
// error's path names is written: its last key or index's line (1 when
// the path names nothing written there).
function faultLine(text, path) {
  let at = 0;
  for (const part of path.split(/[.[\]]+/).filter(Boolean)) {
    if (/^\d+$/.test(part)) continue;
    const i = text.indexOf(JSON.stringify(part.replace(/^"|"$/g, "")), at);
    if (i >= 0) at = i;
  }
  return lineOf(text, at);
}

function renderRelay() {
  const field = (id, label, value, help) => {
    const ta = h("textarea", { id, spellcheck: "false", "aria-describedby": id + "-problem " + id + "-help" });
    ta.value = value;
    return { ta, problem: h("p", { id: id + "-problem", class: "error", role: "alert" }),
      label: h("label", { for: id }, label, ta), help: h("p", { id: id + "-help", class: "muted" }, help) };
  };
  const pipe = field("relay-pipeline", "Pipeline (JSON)", relayForm.pipeline,
    "transformers run in order: context_injector, scope_narrower, token_budget, redactor, …");
  const ctx = field("relay-context", "Relay context (JSON)", relayForm.context,
    "source_agent, target_agent, task, constraints, memory and the prompts to relay.");
  const assemble = h("input", { id: "relay-assemble", type: "checkbox", checked: relayForm.assemble });
  const problem = h("p", { id: "relay-problem", class: "error", role: "alert" });
  const out = h("section", { id: "relay-out", "aria-labelledby": "relay-out-h", "aria-live": "polite" });
  const clear = () => {
    for (const f of [pipe, ctx]) { f.ta.removeAttribute("aria-invalid"); f.problem.textContent = ""; }
    problem.textContent = "";
  };
  const blame = (f, line, message) => {
    f.ta.setAttribute("aria-invalid", "true");
    f.problem.replaceChildren(line ? h("span", { class: "at" }, "line " + line + ": ") : "", show(message));
    f.ta.focus();
  };
  const run = async () => {
    clear();
    relayForm.pipeline = pipe.ta.value;
    relayForm.context = ctx.ta.value;
    relayForm.assemble = assemble.checked;
    const parsed = [];
    for (const f of [pipe, ctx]) {
      try { parsed.push(JSON.parse(f.ta.value)); } catch (e) {
        const at = jsonFault(f.ta.value);
        return blame(f, at >= 0 ? lineOf(f.ta.value, at + 1) : 0, "not JSON: " + e.message);
      }
    }
    out.replaceChildren(h("p", { class: "muted" }, "Relaying…"));
    let json;
    try {
      ({ json } = await api("POST", "/relay", { body: { pipeline: parsed[0], context: parsed[1], assemble: assemble.checked } }));
    } catch (e) {
      out.replaceChildren();
      // The message begins with the path of the part at fault.
      const m = /^(pipeline|context)((?:\.|\[)[^:\s]*)?:/.exec(e.message);
      if (m) {
        const f = m[1] === "pipeline" ? pipe : ctx;
        return blame(f, m[2] ? faultLine(f.ta.value, m[2]) : 0, e.message);
      }
      problem.textContent = show("Not relayed: " + e.message);
      return;
    }
    out.replaceChildren(relayResult(json));
  };
  const form = h("form", { id: "relay", class: "edit", "aria-label": "Relay prompts" },
    h("div", { class: "panes" }, h("div", {}, pipe.label, pipe.help, pipe.problem), h("div", {}, ctx.label, ctx.help, ctx.problem)),
    h("div", { class: "row" },
      h("label", { for: "relay-assemble", class: "check" }, assemble, "Assemble into a chat request"),
      h("button", { type: "submit", class: "primary", id: "relay-run" }, "Relay")),
    problem);
  form.addEventListener("submit", (ev) => { ev.preventDefault(); run(); });
  page("Relay playground",
    h("p", { class: "muted" }, "A parent agent's prompts through a pipeline, as a sub-agent would get them (POST /relay; nothing is stored)."),
    form, out);
}

function relayResult(r) {
  const prompts = (r.prompts || []).map((p) => h("li", { class: "prompt", "data-id": String(p.id ?? "") },
    h("p", {}, h("code", {}, String(p.id ?? "")), p.position ? [" · ", String(p.position)] : null),
    h("pre", { class: "prompt-content", tabindex: "0", "aria-label": "prompt " + String(p.id ?? "") }, String(p.content ?? ""))));
  const steps = ((r.trace && r.trace.steps) || []).map((s, i) => {
    const what = [];
    for (const k of ["added", "removed", "changed"]) if ((s[k] || []).length) what.push(`${k}: ${s[k].join(", ")}`);
    return h("li", { class: "step", "data-transformer": String(s.transformer ?? "") },
      h("strong", {}, String(s.transformer ?? "")), (s.targets || []).length ? " for " + s.targets.join(", ") : "",
      " — ", what.length ? what.join("; ") : "no change",
      (s.notes || []).length ? h("ul", {}, s.notes.map((n) => h("li", {}, String(n)))) : null);
  });
  return h("div", {},
    h("h2", { id: "relay-out-h" }, "Relayed prompts"),
    h("ol", { id: "relay-prompts", class: "prompts" }, prompts),
    h("h2", { id: "relay-trace-h" }, "Trace"),
    h("ol", { id: "relay-trace", "aria-labelledby": "relay-trace-h" }, steps),
    r.request ? [h("h2", { id: "relay-request-h" }, "Chat request"),
      h("pre", { id: "relay-request", tabindex: "0", "aria-labelledby": "relay-request-h" }, JSON.stringify(r.request, null, 2))] : null);
}

// --- gateway ----------------------------------------------------------------

const EXCHANGES = "gateway.exchange.v1";
const RECENT = 20;        // exchanges shown with their attempts
const TIMELINE = 1000;    // records read for requests over time, newest first
const BUCKETS = 24;

// charts are the drawings on the page, redrawn when the colours or the
// width change.
const charts = new Map();
function redrawCharts() { for (const draw of charts.values()) draw(); }
matchMedia("(prefers-color-scheme: dark)").addEventListener("change", redrawCharts);
window.addEventListener("resize", () => { clearTimeout(redrawCharts.timer); redrawCharts.timer = setTimeout(redrawCharts, 100); });

function color(name) {
  return getComputedStyle(document.documentElement).getPropertyValue(name).trim() || "#888";
}

// chart is a canvas drawn by draw(ctx, width) once it is on the page. To
// assistive technology it is an image named by label (the figures as
// text), and it holds a table of the same figures as its fallback.
function chart(id, label, height, draw, table) {
  const c = h("canvas", { id, role: "img", "aria-label": label, class: "chart", height: String(height) }, table);
  const paint = () => {
    if (!c.isConnected) { charts.delete(c); return; }
    const w = Math.max(200, c.parentElement.clientWidth);
    const dpr = window.devicePixelRatio || 1;
    c.width = Math.round(w * dpr);
    c.height = Math.round(height * dpr);
    const ctx = c.getContext("2d");
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, w, height);
    ctx.font = "12px system-ui, sans-serif";
    ctx.textBaseline = "middle";
    draw(ctx, w);
  };
  charts.set(c, paint);
  requestAnimationFrame(paint);
  return c;
}

// figures is a chart's fallback table.
function figures(caption, head, rows) {
  return h("table", {}, h("caption", {}, caption),
    h("thead", {}, h("tr", {}, head.map((t) => h("th", { scope: "col" }, t)))),
    h("tbody", {}, rows.map((r) => h("tr", {}, r.map((v) => h("td", {}, v))))));
}

function clipLabel(ctx, s, max) {
  s = show(s);
  if (ctx.measureText(s).width <= max) return s;
  while (s.length > 1 && ctx.measureText(s + "…").width > max) s = s.slice(0, -1);
  return s + "…";
}

// bars is a horizontal bar chart of values by label.
function bars(id, title, rows, fmt) {
  const label = rows.length ? `${title}: ` + rows.map((r) => `${show(r.label)} ${fmt(r.value)}`).join("; ") : `${title}: none`;
  const max = Math.max(1e-12, ...rows.map((r) => r.value));
  return h("figure", { class: "chart-box" }, h("figcaption", {}, title),
    chart(id, label, 16 + rows.length * 24, (ctx, w) => {
      const left = Math.min(180, w * 0.35), right = 110;
      rows.forEach((r, i) => {
        const y = 8 + i * 24;
        ctx.fillStyle = color("--fg");
        ctx.textAlign = "left";
        ctx.fillText(clipLabel(ctx, r.label, left - 8), 0, y + 9);
        ctx.fillStyle = color("--accent");
        ctx.fillRect(left, y + 2, Math.max(1, (w - left - right) * (r.value / max)), 14);
        ctx.fillStyle = color("--fg");
        ctx.fillText(fmt(r.value), left + (w - left - right) * (r.value / max) + 6, y + 9);
      });
    }, figures(title, ["", title], rows.map((r) => [r.label, fmt(r.value)]))));
}

// columns is a chart of requests over time: one column per bucket.
function columns(id, title, buckets) {
  const total = buckets.reduce((n, b) => n + b.n, 0);
  const busiest = buckets.reduce((m, b) => (b.n > m.n ? b : m), buckets[0]);
  const label = `${title}: ${total} requests from ${when(buckets[0].from)} to ${when(buckets[buckets.length - 1].to)}` +
    (total ? `, the most (${busiest.n}) from ${when(busiest.from)}` : "");
  const max = Math.max(1, ...buckets.map((b) => b.n));
  return h("figure", { class: "chart-box" }, h("figcaption", {}, title),
    chart(id, label, 160, (ctx, w) => {
      const top = 14, bottom = 130, left = 34, cw = (w - left) / buckets.length;
      ctx.fillStyle = color("--muted");
      ctx.textAlign = "right";
      ctx.fillText(String(max), left - 6, top);
      ctx.fillText("0", left - 6, bottom);
      ctx.fillStyle = color("--accent");
      buckets.forEach((b, i) => {
        const hgt = (bottom - top) * (b.n / max);
        ctx.fillRect(left + i * cw + 1, bottom - hgt, Math.max(1, cw - 2), hgt);
      });
      ctx.fillStyle = color("--muted");
      ctx.textAlign = "left";
      ctx.fillText(when(buckets[0].from), left, 146);
      ctx.textAlign = "right";
      ctx.fillText(when(buckets[buckets.length - 1].to), w, 146);
    }, figures(title, ["from", "to", "requests"], buckets.map((b) => [when(b.from), when(b.to), String(b.n)]))));
}

function usd(n) { return "$" + (n >= 1 ? n.toFixed(2) : n.toFixed(4)); }
function count(n) { return Number(n).toLocaleString("en-US"); }

async function renderGateway() {
  page("Gateway", h("p", { class: "muted" }, "Loading…"));
  let cfg;
  try {
    cfg = (await api("GET", "/gateway/routes")).json;
  } catch (e) {
    page("Gateway", h("p", { id: "gw-none", role: "status" }, e.status === 404
      ? "This server runs no gateway: start ctxkit serve with --config naming its providers."
      : "Could not read the gateway's configuration: " + e.message));
    return;
  }
  const typeOf = new Map((cfg.providers || []).map((p) => [p.name, p.type]));
  const providers = h("table", { id: "gw-providers" }, h("caption", {}, "Providers"),
    h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "Provider"), h("th", { scope: "col" }, "Type"), h("th", { scope: "col" }, "Models"))),
    h("tbody", {}, (cfg.providers || []).map((p) => h("tr", { "data-provider": p.name },
      h("td", {}, data(p.name)), h("td", {}, data(p.type + (p.api ? " (" + p.api + ")" : ""))),
      h("td", {}, (p.models || []).map((m) => h("code", { class: "tag" }, show(m))))))));
  const routes = h("table", { id: "gw-routes" }, h("caption", {}, "Routes: the model a client asks for → the targets tried in order"),
    h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "Model"), h("th", { scope: "col" }, "Targets"), h("th", { scope: "col" }, "Recorded"))),
    h("tbody", {}, (cfg.routes || []).map((r) => h("tr", { "data-route": r.model },
      h("td", {}, h("code", {}, show(r.model))),
      h("td", {}, h("ol", { class: "targets" }, (r.targets || []).map((t) => h("li", { class: "target" },
        data(t.provider), " (", data(t.type || typeOf.get(t.provider) || ""), ") → ", h("code", {}, show(t.model)))))),
      h("td", {}, r.record ? "yes" : "no")))));
  const traffic = h("section", { id: "gw-traffic", "aria-labelledby": "gw-traffic-h", "aria-busy": "true" },
    h("h2", { id: "gw-traffic-h" }, "Traffic in the last 24 hours"), h("p", { class: "muted" }, "Loading the traffic records…"));
  page("Gateway", h("section", { "aria-labelledby": "gw-config-h" }, h("h2", { id: "gw-config-h" }, "Configuration"),
    h("div", { class: "scroll" }, providers), h("div", { class: "scroll" }, routes)), traffic);
  try {
    traffic.replaceChildren(...(await gatewayTraffic()));
  } catch (e) {
    traffic.replaceChildren(h("h2", { id: "gw-traffic-h" }, "Traffic"), h("p", { class: "error", role: "alert" }, "Could not read the traffic: " + e.message));
  }
  traffic.setAttribute("aria-busy", "false");
}

async function gatewayTraffic() {
  const head = h("h2", { id: "gw-traffic-h" }, "Traffic in the last 24 hours");
  const [byModel, byAgent] = await Promise.all(["model", "agent"].map((g) => api("GET", "/gateway/usage" + q({ group_by: g })).then((r) => r.json)));
  // The newest records, for requests over time (a list of summaries is
  // cheap: no contexts).
  const since = Date.now() - 24 * 3600e3;
  let times = [], cursor = "";
  do {
    const { json } = await api("GET", "/breadcrumbs" + q({ schema_name: EXCHANGES, tag: "gateway.exchange", limit: 200, cursor }));
    const items = json.items || [];
    times.push(...items.map((b) => Date.parse(b.updated_at)).filter((t) => !isNaN(t)));
    cursor = json.next_cursor || "";
    if (items.length && Date.parse(items[items.length - 1].updated_at) < since) break;
  } while (cursor && times.length < TIMELINE);
  times = times.filter((t) => t >= since);
  if (byModel.total.requests === 0 && times.length === 0) {
    return [head, h("p", { id: "gw-no-traffic" }, "No traffic records: a route keeps them with record: true in the gateway's configuration.")];
  }
  const tot = byModel.total;
  const summary = h("p", { id: "gw-total" }, `${count(tot.requests)} requests, ${count(tot.errors)} failed; ` +
    `${count(tot.tokens.input)} input and ${count(tot.tokens.output)} output tokens; ${usd(tot.cost_usd)}` +
    (tot.unpriced_requests ? ` (and ${tot.unpriced_requests} requests without a price)` : "") + (byModel.complete ? "" : " — only the newest records were read") + ".");
  // Buckets from the oldest record shown (at least an hour back) to now.
  const now = Date.now(), from = Math.min(now - 3600e3, ...times), step = (now - from) / BUCKETS;
  const buckets = Array.from({ length: BUCKETS }, (_, i) => ({ from: new Date(from + i * step).toISOString(), to: new Date(from + (i + 1) * step).toISOString(), n: 0 }));
  for (const t of times) buckets[Math.min(BUCKETS - 1, Math.floor((t - from) / step))].n++;
  const tokens = (g) => ({ label: g.key || "(none)", value: g.tokens.input + g.tokens.output });
  const cost = (g) => ({ label: g.key || "(none)", value: g.cost_usd });
  const recent = h("section", { "aria-labelledby": "gw-recent-h" }, h("h2", { id: "gw-recent-h" }, "Recent exchanges"),
    await recentExchanges());
  return [head, summary,
    columns("gw-chart-time", "Requests over time", buckets),
    h("div", { class: "charts" },
      bars("gw-chart-tokens-model", "Tokens per model", byModel.groups.map(tokens), count),
      bars("gw-chart-cost-model", "Cost per model (USD)", byModel.groups.map(cost), usd),
      bars("gw-chart-tokens-agent", "Tokens per agent", byAgent.groups.map(tokens), count),
      bars("gw-chart-cost-agent", "Cost per agent (USD)", byAgent.groups.map(cost), usd)),
    recent];
}

// recentExchanges reads the views of the newest records (the view hides
// the bodies) and shows each exchange with its agent and attempts. The
// agent who made the request is the record's creator, the created_by of
// the list's summary.
async function recentExchanges() {
  const { json } = await api("GET", "/breadcrumbs" + q({ schema_name: EXCHANGES, tag: "gateway.exchange", limit: RECENT }));
  const ids = (json.items || []).map((b) => b.id), agents = (json.items || []).map((b) => String(b.created_by ?? ""));
  const views = new Array(ids.length);
  let next = 0;
  await Promise.all(Array.from({ length: Math.min(4, ids.length) }, async () => {
    while (next < ids.length) {
      const i = next++;
      try { views[i] = (await api("GET", "/breadcrumbs/" + encodeURIComponent(ids[i]))).json; } catch { views[i] = null; }
    }
  }));
  const rows = views.map((v, i) => {
    const x = (v && v.context) || {};
    const sm = x.summary || {};
    const usage = x.usage || {};
    return h("tr", { "data-id": ids[i] },
      h("td", { class: "opt" }, h("time", { datetime: String(x.started ?? "") }, when(x.started))),
      h("td", {}, h("a", { href: "#/b/" + encodeURIComponent(ids[i]) }, h("code", {}, show(String(x.route ?? "?"))))),
      h("td", { class: "gw-agent" }, data(agents[i])),
      h("td", { class: "num" }, String(x.status ?? "")),
      h("td", {}, data([sm.provider, sm.model].filter(Boolean).join(" / "))),
      h("td", { class: "num" }, count((usage.input_tokens || 0) + (usage.output_tokens || 0))),
      h("td", { class: "num opt" }, x.cost_usd === undefined ? "—" : usd(x.cost_usd)),
      h("td", { class: "num opt" }, x.total_ms === undefined ? "" : Math.round(x.total_ms) + " ms"),
      h("td", {}, h("ol", { class: "attempts" }, (Array.isArray(x.attempts) ? x.attempts : []).map((a) => h("li", { class: "attempt" + (a.error_class ? " failed" : "") },
        data(`${a.provider} / ${a.model}`), ": ", String(a.status || "no answer"), a.error_class ? " (" + a.error_class + ")" : "",
        a.latency_ms === undefined ? "" : ", " + Math.round(a.latency_ms) + " ms")))));
  });
  if (rows.length === 0) return h("p", { class: "muted" }, "None yet.");
  return h("div", { class: "scroll" }, h("table", { id: "gw-exchanges" }, h("caption", { class: "muted" }, `The newest ${rows.length}, with every upstream attempt.`),
    h("thead", {}, h("tr", {}, ["When", "Route", "Agent", "Status", "Answered by", "Tokens", "Cost", "Time", "Attempts"].map((t, i) =>
      h("th", { scope: "col", class: [0, 6, 7].includes(i) ? "opt" : null }, t)))),
    h("tbody", {}, rows)));
}

// --- webhooks -----------------------------------------------------------------

const HOOK_PAGE = 25;      // deliveries a page shows
const HOOK_WATCH = 60;     // checks of a redelivered delivery's status, a second apart
const HOOK_STATUSES = [["failed", "Failed (dead letters)"], ["pending", "Pending"], ["delivered", "Delivered"], ["", "All"]];
const HOOK_FIELDS = ["url", "selector", "payload", "description"];

// hookView is the webhook page's place: the webhook shown, the status
// filter and the cursors of the pages seen.
const hookView = { id: "", status: "failed", cursors: [""], next: "" };

// hookState is a webhook's state in words.
function hookState(w) {
  if (w.paused) return "Paused" + (w.paused_reason ? ": " + w.paused_reason : "");
  if (w.failing_since) return "Failing since " + when(w.failing_since);
  return "Active";
}

// hooksForbidden is what a token that may not manage webhooks sees: the
// API keeps every webhook route for emitters and curators.
function hooksForbidden(message) {
  const roles = auth.claims().roles;
  page("Webhooks", h("p", { id: "hooks-none", role: "status" },
    "Webhooks belong to an agent and need a token with the emitter or curator role; this token has " +
    (roles.length ? roles.join(", ") : "no role") + "."), message ? h("p", { class: "muted" }, message) : null);
}

// secretBox shows a signing secret once: the page keeps it nowhere but
// in this box, which goes with the next page or the dismiss button.
function secretBox(w, secret, until) {
  const code = h("code", { id: "hook-secret", class: "secret", tabindex: "0", "aria-label": "signing secret" }, secret);
  const said = h("span", { id: "hook-secret-copied", role: "status" });
  const box = h("div", { id: "hook-secret-box", class: "notice", role: "alert", "aria-labelledby": "hook-secret-h" },
    h("h2", { id: "hook-secret-h" }, "Copy the signing secret now"),
    h("p", {}, "This is the only time ctxkit shows it: give it to the receiver's verifier. " +
      "Neither the server nor this page will show it again; lost, it can only be replaced (rotate the secret)."),
    until ? h("p", {}, "The previous secret keeps signing beside this one until " + when(until) + ".") : null,
    h("p", {}, "Webhook ", h("code", {}, w.id), ": ", code),
    h("div", { class: "row" },
      h("button", { type: "button", id: "hook-secret-copy", onclick: async () => {
        try {
          await navigator.clipboard.writeText(secret);
          said.textContent = "Copied.";
        } catch {
          said.textContent = "The browser did not let the page copy: select the secret and copy it.";
        }
      } }, "Copy"),
      h("button", { type: "button", id: "hook-secret-done", onclick: () => { box.remove(); $("page-title").focus(); } }, "I have copied it"),
      said));
  return box;
}

function clearFields(fields, general) {
  for (const f of Object.values(fields)) { f.input.removeAttribute("aria-invalid"); f.problem.textContent = ""; }
  general.textContent = "";
}

// blameField puts an API error at the form field it names (the message
// starts with the field's path), or under the form.
function blameField(fields, general, e) {
  clearFields(fields, general);
  const m = /^([a-z_]+)[.:[]/.exec(e.message || "");
  const f = m && fields[m[1]];
  if (!f) { general.textContent = show("Not saved: " + e.message); return; }
  f.input.setAttribute("aria-invalid", "true");
  f.problem.textContent = show(e.message);
  f.input.focus();
}

// renderWebhooks lists the agent's webhooks with the form that makes
// one; shown is a just-made webhook's secret box, which the page shows
// whether the list loads or not.
async function renderWebhooks(shown) {
  hookView.id = "";
  if (!auth.can("emitter")) return hooksForbidden();
  if (!shown) page("Webhooks", h("p", { class: "muted" }, "Loading…"));
  let items;
  try {
    items = (await api("GET", "/webhooks")).json.items || [];
  } catch (e) {
    if (e.status === 403) return hooksForbidden(e.message);
    page("Webhooks", shown || "", h("p", { class: "error", role: "alert" }, "Could not load the webhooks: " + e.message));
    return;
  }
  const rows = items.map((w) => h("tr", { "data-id": w.id },
    h("td", { class: "title" }, h("a", { href: "#/webhooks/" + encodeURIComponent(w.id), class: "hook-link" },
      data(w.description || "(no description)")), h("br"), h("code", { class: "hook-url" }, show(w.url))),
    h("td", { class: "opt" }, h("code", {}, brief(w.selector, 120))),
    h("td", {}, String(w.payload || "view")),
    h("td", { class: "hook-state" + (w.paused || w.failing_since ? " bad" : "") }, data(hookState(w)),
      w.missed_through ? h("span", { class: "muted" }, " · events through " + w.missed_through + " were pruned before delivery") : null),
    h("td", { class: "opt" }, h("time", { datetime: w.created_at }, when(w.created_at)))));
  const table = items.length === 0 ? h("p", { id: "hooks-empty" }, "This agent has no webhooks yet.")
    : h("div", { class: "scroll" }, h("table", { id: "hooks" }, h("caption", { class: "muted" }, `${items.length} ${items.length === 1 ? "webhook" : "webhooks"} of this agent, oldest first.`),
      h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "Webhook"), h("th", { scope: "col", class: "opt" }, "Selector"),
        h("th", { scope: "col" }, "Payload"), h("th", { scope: "col" }, "State"), h("th", { scope: "col", class: "opt" }, "Created"))),
      h("tbody", {}, rows)));
  const secret = h("div", { id: "hook-secret-slot" }, shown || "");
  page("Webhooks", h("p", { class: "muted" }, "Changes this agent may read, delivered to HTTP endpoints, signed and retried; " +
    "failed deliveries wait in each webhook's dead-letter list."), secret, table, hookCreator());
}

// hookField is a labelled control of a webhook form with its help and the
// place where a problem with it is told; ids start with the form's.
function hookField(form, name, label, input, help) {
  const at = form + "-" + name;
  const problem = h("p", { id: at + "-problem", class: "error", role: "alert" });
  input.setAttribute("aria-describedby", at + "-problem" + (help ? " " + at + "-help" : ""));
  return { input, problem, el: h("div", {}, h("label", { for: input.id }, label, input),
    help ? h("p", { id: at + "-help", class: "muted" }, help) : null, problem) };
}

const URL_HELP = "An https address the server may reach (private ones only with serve --webhook-allow-private).";
const SELECTOR_HELP = "any_tags, all_tags, schema_name, kinds, context_match; {} selects every change.";

// selectorOf reads a selector field's JSON, or tells where it is not JSON.
function selectorOf(ta) {
  try { return { selector: JSON.parse(ta.value) }; } catch (e) {
    const at = jsonFault(ta.value);
    return { error: { message: "selector: " + (at >= 0 ? "line " + lineOf(ta.value, at + 1) + ": " : "") + "not JSON: " + e.message } };
  }
}

// hookCreator is the form that registers a webhook (POST /webhooks).
function hookCreator() {
  const field = (name, label, input, help) => hookField("hook", name, label, input, help);
  const sel = h("textarea", { id: "hook-selector", spellcheck: "false", class: "short" });
  sel.value = "{}";
  const fields = {
    url: field("url", "Target URL", h("input", { id: "hook-url", type: "url", required: true, spellcheck: "false" }), URL_HELP),
    selector: field("selector", "Selector (JSON)", sel, SELECTOR_HELP),
    payload: field("payload", "Payload", h("select", { id: "hook-payload" },
      h("option", { value: "view" }, "view: the record as the model sees it"), h("option", { value: "full" }, "full: the whole record"))),
    description: field("description", "Description", h("input", { id: "hook-description", maxlength: "1024" })),
  };
  const general = h("p", { id: "hook-create-problem", class: "error", role: "alert" });
  const form = h("form", { id: "hook-create", class: "edit", "aria-labelledby": "hook-create-h" },
    h("h2", { id: "hook-create-h" }, "New webhook"),
    HOOK_FIELDS.map((k) => fields[k].el),
    h("div", { class: "row" }, h("button", { type: "submit", class: "primary", id: "hook-create-submit" }, "Create webhook")),
    general);
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const { selector, error } = selectorOf(sel);
    if (error) return blameField(fields, general, error);
    const body = { url: fields.url.input.value.trim(), selector, payload: fields.payload.input.value, description: fields.description.input.value };
    let json;
    try {
      ({ json } = await api("POST", "/webhooks", { body }));
    } catch (e) {
      return blameField(fields, general, e);
    }
    const secret = String(json.secret ?? "");
    delete json.secret;
    await renderWebhooks(secretBox(json, secret, null));
    if ($("hook-secret")) $("hook-secret").focus();
  });
  return form;
}

// renderWebhook shows a webhook and its deliveries; again (after an
// action on it) keeps the page until the new one is ready.
async function renderWebhook(id, again = false) {
  if (!auth.can("emitter")) return hooksForbidden();
  if (hookView.id !== id) Object.assign(hookView, { id, status: "failed", cursors: [""], next: "" });
  if (!again) page("Webhook", h("p", { class: "muted" }, "Loading…"));
  let w;
  try {
    w = (await api("GET", "/webhooks/" + encodeURIComponent(id))).json;
  } catch (e) {
    if (e.status === 403) return hooksForbidden(e.message);
    page("Webhook", h("p", { class: "error", role: "alert" }, "Could not load the webhook: " + e.message),
      h("p", {}, h("a", { href: "#/webhooks" }, "Back to the webhooks")));
    return;
  }
  const base = "/webhooks/" + encodeURIComponent(w.id);
  const said = h("div", { id: "hook-said", role: "status" });
  const tell = (text, bad) => said.replaceChildren(h("p", { class: bad ? "error" : "" }, show(text)));
  const secret = h("div", { id: "hook-secret-slot" });
  const act = (label, idAttr, run, cls) => h("button", { type: "button", id: idAttr, class: cls, onclick: async () => {
    try { await run(); } catch (e) { tell(label + " failed: " + e.message, true); }
  } }, label);
  const actions = h("div", { class: "row", id: "hook-actions" },
    act(w.paused ? "Resume" : "Pause", "hook-pause", async () => {
      await api("PATCH", base, { body: { paused: !w.paused } });
      await renderWebhook(w.id, true);
      if (!$("hook-said")) return; // another page meanwhile
      $("hook-said").replaceChildren(h("p", {}, w.paused ? "Resumed." : "Paused: nothing is delivered until you resume."));
      $("hook-pause").focus();
    }),
    act("Send a test", "hook-test", async () => {
      const { json } = await api("POST", base + "/test");
      tell("A test message is queued (delivery " + json.id + "); it shows under Pending, then Delivered or Failed.");
      if (hookView.status === "pending" || hookView.status === "") loadDeliveries(w);
    }),
    act("Redeliver all failed", "hook-redeliver-all", async () => {
      const { json } = await api("POST", base + "/redeliver");
      tell(json.redelivered === 0 ? "No failed deliveries to redeliver."
        : json.redelivered === 1 ? "1 failed delivery is queued again." : json.redelivered + " failed deliveries are queued again.");
      loadDeliveries(w);
    }),
    act("Rotate secret", "hook-rotate", async () => {
      const { json } = await api("POST", base + "/rotate-secret");
      const s = String(json.secret ?? "");
      delete json.secret;
      secret.replaceChildren(secretBox(json, s, json.previous_secret_until));
      if ($("hook-secret")) $("hook-secret").focus();
    }),
    hookDeleter(w));
  const filter = h("div", { class: "row", role: "group", "aria-label": "Deliveries by status", id: "dl-filter" },
    HOOK_STATUSES.map(([st, label]) => h("button", { type: "button", "data-status": st, "aria-pressed": String(hookView.status === st),
      onclick: (ev) => {
        hookView.status = st;
        hookView.cursors = [""];
        for (const b of filter.querySelectorAll("button")) b.setAttribute("aria-pressed", String(b === ev.currentTarget));
        loadDeliveries(w);
      } }, label)));
  const table = h("table", { id: "deliveries", "aria-describedby": "dl-status" },
    h("caption", { class: "muted", id: "dl-status", "aria-live": "polite" }, "Loading…"),
    h("thead", {}, h("tr", {}, h("th", { scope: "col", class: "opt" }, "Created"), h("th", { scope: "col" }, "Kind"),
      h("th", { scope: "col", class: "num" }, "Event"), h("th", { scope: "col" }, "Status"), h("th", { scope: "col", class: "num" }, "Attempts"),
      h("th", { scope: "col" }, "Actions"))),
    h("tbody", { id: "dl-rows" }));
  const pager = h("nav", { class: "pager", "aria-label": "Pages of deliveries" },
    h("button", { type: "button", id: "dl-first", onclick: () => { hookView.cursors = [""]; loadDeliveries(w); } }, "First page"),
    h("button", { type: "button", id: "dl-next", onclick: () => { hookView.cursors.push(hookView.next); loadDeliveries(w); } }, "Next page"),
    h("button", { type: "button", id: "dl-refresh", onclick: () => loadDeliveries(w) }, "Refresh"),
    h("span", { id: "dl-page", class: "muted" }));
  page(w.description || "Webhook",
    h("p", {}, h("a", { href: "#/webhooks" }, "← All webhooks")),
    h("dl", { id: "hook-info", class: "facts" },
      h("dt", {}, "Target"), h("dd", {}, h("code", { id: "hook-info-url" }, show(w.url))),
      h("dt", {}, "Description"), h("dd", { id: "hook-info-description" }, data(w.description || "(none)")),
      h("dt", {}, "Selector"), h("dd", {}, h("pre", { id: "hook-info-selector" }, JSON.stringify(w.selector, null, 2))),
      h("dt", {}, "Payload"), h("dd", {}, String(w.payload || "view")),
      h("dt", {}, "State"), h("dd", { id: "hook-info-state" }, data(hookState(w)), w.paused && w.paused_at ? " (since " + when(w.paused_at) + ")" : ""),
      w.failing_since && w.paused ? [h("dt", {}, "Failing since"), h("dd", {}, when(w.failing_since))] : null,
      w.missed_through ? [h("dt", {}, "Missed"), h("dd", { id: "hook-info-missed" },
        "events up to sequence " + w.missed_through + " were pruned before this webhook reached them: they were never delivered")] : null,
      h("dt", {}, "Id"), h("dd", {}, h("code", {}, w.id))),
    actions, said, secret, hookEditor(w),
    h("h2", { id: "dl-h" }, "Deliveries"),
    h("p", { class: "muted" }, "Failed deliveries are the dead-letter list: a final answer (a 4xx other than 408 and 429) or retries run out. Attempts are kept 7 days."),
    filter, h("div", { class: "scroll" }, table), pager);
  dlLive.start(w);
  loadDeliveries(w);
}

// hookEditor changes a webhook's target, selector or description (PATCH
// with the fields changed only).
function hookEditor(w) {
  const field = (name, label, input, help) => hookField("hook-edit", name, label, input, help);
  const sel = h("textarea", { id: "hook-edit-selector", spellcheck: "false", class: "short" });
  sel.value = JSON.stringify(w.selector ?? {}, null, 2);
  const fields = {
    url: field("url", "Target URL", h("input", { id: "hook-edit-url", type: "url", required: true, spellcheck: "false", value: w.url }), URL_HELP),
    selector: field("selector", "Selector (JSON)", sel, SELECTOR_HELP),
    description: field("description", "Description", h("input", { id: "hook-edit-description", maxlength: "1024", value: w.description || "" })),
  };
  const general = h("p", { id: "hook-edit-problem", class: "error", role: "alert" });
  const form = h("form", { id: "hook-edit", "aria-label": "Change the webhook" },
    ["url", "selector", "description"].map((k) => fields[k].el),
    h("div", { class: "row" }, h("button", { type: "submit", class: "primary", id: "hook-edit-submit" }, "Save changes")),
    general);
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const { selector, error } = selectorOf(sel);
    if (error) return blameField(fields, general, error);
    const body = {};
    const url = fields.url.input.value.trim();
    if (url !== w.url) body.url = url;
    if (JSON.stringify(selector) !== JSON.stringify(w.selector ?? {})) body.selector = selector;
    if (fields.description.input.value !== (w.description || "")) body.description = fields.description.input.value;
    if (Object.keys(body).length === 0) {
      clearFields(fields, general);
      general.textContent = "Nothing changed.";
      return;
    }
    try {
      await api("PATCH", "/webhooks/" + encodeURIComponent(w.id), { body });
    } catch (e) {
      return blameField(fields, general, e);
    }
    await renderWebhook(w.id, true);
    if ($("hook-said")) $("hook-said").replaceChildren(h("p", {}, "Saved: " + Object.keys(body).join(", ") + " changed."));
  });
  return h("details", { id: "hook-edit-box", class: "edit" }, h("summary", {}, "Change the target, selector or description"), form);
}

// hookDeleter asks before deleting a webhook with its deliveries.
function hookDeleter(w) {
  const area = h("span", { class: "inline", id: "hook-delete-area" });
  const start = () => h("button", { type: "button", id: "hook-delete", class: "danger", onclick: () => { ask(); $("hook-delete-confirm").focus(); } }, "Delete…");
  const ask = () => area.replaceChildren(
    h("span", { role: "alert" }, "Delete this webhook and its deliveries?"),
    h("button", { type: "button", id: "hook-delete-confirm", class: "danger", onclick: async () => {
      try {
        await api("DELETE", "/webhooks/" + encodeURIComponent(w.id));
        location.hash = "#/webhooks";
      } catch (e) {
        area.replaceChildren(h("span", { class: "error", role: "alert" }, show("Not deleted: " + e.message)));
      }
    } }, "Delete for good"),
    h("button", { type: "button", id: "hook-delete-cancel", onclick: () => { area.replaceChildren(start()); $("hook-delete").focus(); } }, "Cancel"));
  area.append(start());
  return area;
}

let dlSeq = 0;

// loadDeliveries shows the page of deliveries hookView names. A load the
// user asked for (a filter, a page, an action) counts in the table's
// data-loads; a live one (see dlLive) does not, and gives way to any
// load the user starts meanwhile. Either way the rows are changed in
// place: a delivery already on screen keeps its row (its focus, its open
// attempts, the text selected in it), and only what changed is redrawn.
// It resolves to whether the page changed.
async function loadDeliveries(w, live = false) {
  const seq = live ? dlSeq : ++dlSeq;
  if (!live) dlLive.kick();
  const at = hookView.cursors[hookView.cursors.length - 1];
  let json;
  try {
    ({ json } = await api("GET", "/webhooks/" + encodeURIComponent(w.id) + "/deliveries" + q({ status: hookView.status, limit: HOOK_PAGE, cursor: at })));
  } catch (e) {
    if (seq === dlSeq && $("dl-status")) $("dl-status").textContent = show("Could not load the deliveries: " + e.message);
    return false;
  }
  const body = $("dl-rows");
  if (seq !== dlSeq || !body) return false;
  const items = (json.items || []).filter((d) => d && typeof d.id === "string");
  const next = json.next_cursor || "";
  const placed = placeDeliveries(w, body, items, live);
  let changed = placed.changed || next !== hookView.next;
  hookView.next = next;
  const what = (n) => {
    const noun = n === 1 ? "delivery" : "deliveries";
    return hookView.status === "delivered" ? noun + " made" : hookView.status ? hookView.status + " " + noun : noun;
  };
  // Said again only when it changes: the caption is a live region.
  const said = items.length === 0 ? `No ${what(0)}` + (hookView.cursors.length > 1 ? " on this page." : ".")
    : `${items.length} ${what(items.length)}, newest first` + (hookView.next ? "; more on the next page." : ".");
  if ($("dl-status").textContent !== said) $("dl-status").textContent = said;
  $("dl-next").disabled = !hookView.next;
  $("dl-first").disabled = hookView.cursors.length <= 1;
  $("dl-page").textContent = "Page " + hookView.cursors.length;
  const t = $("deliveries").dataset;
  if (live) t.refreshes = String(Number(t.refreshes || 0) + 1);
  else t.loads = String(Number(t.loads || 0) + 1);
  if (placed.held.length && await refreshHeld(w, placed.held, seq)) changed = true;
  return changed;
}

// deliveryRows keeps each delivery row's parts: its detail row and the
// function that redraws it from a delivery.
const deliveryRows = new WeakMap();

// deliverySig is what a delivery row shows: the row is redrawn only when
// it changes.
function deliverySig(d) {
  return JSON.stringify([d.status, d.reason, d.attempts, d.next_at]);
}

// placeDeliveries makes body hold items' rows in order, reusing the rows
// on screen by delivery id; it says whether anything changed. On a live
// refresh a row whose delivery left the page (redelivered from Failed,
// say) stays where it was while the user is at it: it holds the focus,
// its attempts are open, or its redelivery is being watched.
function placeDeliveries(w, body, items, live) {
  const have = new Map();
  for (const tr of body.children) if (tr.dataset.id) have.set(tr.dataset.id, tr);
  let changed = false;
  const want = [];
  const held = [];
  if (live) {
    const ids = new Set(items.map((d) => d.id));
    let at = 0;
    for (const [id, tr] of have) {
      const parts = deliveryRows.get(tr);
      if (!ids.has(id) && parts && (tr.dataset.watched || !parts.detail.hidden ||
        tr.contains(document.activeElement) || parts.detail.contains(document.activeElement))) held.push([at, tr, parts.detail]);
      at++;
    }
  }
  for (const d of items) {
    let tr = have.get(d.id);
    if (tr && deliveryRows.has(tr)) {
      const parts = deliveryRows.get(tr);
      if (tr.dataset.sig !== deliverySig(d)) { parts.paint(d); changed = true; }
      want.push(tr, parts.detail);
    } else {
      const frag = deliveryRow(w, d);
      tr = frag.firstElementChild;
      want.push(tr, deliveryRows.get(tr).detail);
      changed = true;
    }
  }
  for (const [at, tr, detail] of held) want.splice(Math.min(2 * at, want.length), 0, tr, detail);
  if (!changed) changed = want.length !== body.children.length || want.some((n, i) => body.children[i] !== n);
  patchChildren(body, want);
  return { changed, held: held.map(([, tr]) => tr) };
}

// DL_HELD bounds the rows kept off their page that a live refresh reads
// one by one (each is a row the user is at: there are seldom more).
const DL_HELD = 5;

// refreshHeld reads again the deliveries of rows kept on screen though
// they left the page, one at a time, and says whether any changed.
async function refreshHeld(w, rows, seq) {
  let changed = false;
  for (const tr of rows.slice(0, DL_HELD)) {
    const parts = deliveryRows.get(tr);
    if (!parts || !tr.isConnected || tr.dataset.watched) continue; // a watch reads it already
    let json;
    try {
      ({ json } = await api("GET", "/webhooks/" + encodeURIComponent(w.id) + "/deliveries/" + encodeURIComponent(tr.dataset.id)));
    } catch { continue; }
    if (seq !== dlSeq || !tr.isConnected) return changed;
    if (tr.dataset.sig === deliverySig(json)) continue;
    parts.paint(json);
    if (!parts.detail.hidden) attemptsInto(parts.detail.cells[0], json);
    changed = true;
  }
  return changed;
}

// DL_LIVE_* pace the live refresh of a webhook's deliveries: every
// DL_LIVE_MIN ms while they change, slowing down twofold at each look
// that finds nothing new, to DL_LIVE_MAX ms.
const DL_LIVE_MIN = 2000;
const DL_LIVE_MAX = 30000;

// dlLive keeps the deliveries on screen current while the webhook's page
// is open and the tab visible: one look in flight at most, none while
// the tab is hidden (a look follows soon after it shows again), and
// none once another page is shown.
const dlLive = {
  w: null, timer: 0, busy: false, delay: DL_LIVE_MIN, kicked: false,
  start(w) {
    this.w = w;
    this.delay = DL_LIVE_MIN;
    this.schedule();
  },
  stop() {
    clearTimeout(this.timer);
    this.timer = 0;
    this.w = null;
  },
  // kick brings the next look near after something the user did, which
  // is when deliveries change.
  kick() {
    if (!this.w) return;
    this.delay = DL_LIVE_MIN;
    this.kicked = true; // a look in flight now must not slow the next one down
    this.schedule();
  },
  schedule() {
    clearTimeout(this.timer);
    this.timer = 0;
    if (!this.w || document.hidden || this.busy) return;
    this.timer = setTimeout(() => this.look(), this.delay);
  },
  async look() {
    this.timer = 0;
    const w = this.w;
    if (!w || hookView.id !== w.id || !$("dl-rows")) { this.stop(); return; }
    if (document.hidden) return;
    this.busy = true;
    this.kicked = false;
    let changed = false;
    try { changed = await loadDeliveries(w, true); } finally { this.busy = false; }
    if (this.w !== w) return;
    this.delay = changed || this.kicked ? DL_LIVE_MIN : Math.min(this.delay * 2, DL_LIVE_MAX);
    this.schedule();
  },
};
document.addEventListener("visibilitychange", () => {
  if (!dlLive.w) return;
  if (document.hidden) { clearTimeout(dlLive.timer); dlLive.timer = 0; return; }
  dlLive.delay = DL_LIVE_MIN;
  dlLive.schedule();
});

function deliveryRow(w, d) {
  const tr = h("tr", { "data-id": d.id, "data-status": d.status });
  const detail = h("tr", { class: "dl-detail", "data-for": d.id, hidden: true }, h("td", { colspan: "6" }));
  const status = h("td", { class: "dl-state" });
  const paint = (d) => {
    tr.dataset.status = d.status;
    tr.dataset.sig = deliverySig(d);
    status.replaceChildren(h("span", { class: "dl-" + (/^[a-z]+$/.test(d.status) ? d.status : "other") }, String(d.status ?? "")),
      h("span", { class: "dl-reason" }, d.reason ? [" — ", data(d.reason)] : null),
      d.status === "pending" && d.next_at ? h("span", { class: "muted" }, " · due " + when(d.next_at)) : "");
    tr.cells[4].textContent = String(d.attempts ?? 0);
    redo.hidden = d.status === "pending";
  };
  const open = h("button", { type: "button", class: "dl-open", "aria-expanded": "false", "aria-controls": "dl-detail-" + d.id,
    onclick: async () => {
      if (open.getAttribute("aria-expanded") === "true") {
        open.setAttribute("aria-expanded", "false");
        detail.hidden = true;
        return;
      }
      open.setAttribute("aria-expanded", "true");
      detail.hidden = false;
      await showAttempts(w, d.id, detail.cells[0], paint);
    } }, "Attempts");
  const redo = h("button", { type: "button", class: "dl-redeliver", onclick: async () => {
    try {
      const { json } = await api("POST", "/webhooks/" + encodeURIComponent(w.id) + "/deliveries/" + encodeURIComponent(d.id) + "/redeliver");
      paint(json);
      if (!tr.isConnected) return;
      open.focus();
      $("hook-said").replaceChildren(h("p", {}, "Delivery " + d.id + " is queued again."));
      watchDelivery(w, d.id, tr, paint, detail, open);
    } catch (e) {
      if ($("hook-said")) $("hook-said").replaceChildren(h("p", { class: "error", role: "alert" }, show("Redelivery failed: " + e.message)));
    }
  } }, "Redeliver");
  redo.setAttribute("aria-label", "Redeliver " + d.id);
  open.setAttribute("aria-label", "Attempts of " + d.id);
  detail.id = "dl-detail-" + d.id;
  tr.append(h("td", { class: "opt" }, h("time", { datetime: d.created_at }, when(d.created_at))),
    h("td", {}, String(d.kind ?? "")),
    h("td", { class: "num" }, d.seq ? String(d.seq) : "—"),
    status, h("td", { class: "num" }),
    h("td", { class: "dl-actions" }, open, " ", redo));
  paint(d);
  deliveryRows.set(tr, { detail, paint });
  const frag = document.createDocumentFragment();
  frag.append(tr, detail);
  return frag;
}

// watchDelivery re-reads a redelivered delivery about once a second until
// it settles (bounded), so the row shows where it went.
async function watchDelivery(w, id, tr, paint, detail, open) {
  tr.dataset.watched = "1";
  try { await watchUntilSettled(w, id, tr, paint, detail, open); } finally { delete tr.dataset.watched; }
}

async function watchUntilSettled(w, id, tr, paint, detail, open) {
  for (let i = 0; i < HOOK_WATCH && tr.isConnected; i++) {
    await new Promise((r) => setTimeout(r, 1000));
    if (!tr.isConnected) return;
    let json;
    try {
      ({ json } = await api("GET", "/webhooks/" + encodeURIComponent(w.id) + "/deliveries/" + encodeURIComponent(id)));
    } catch { return; }
    paint(json);
    if (open.getAttribute("aria-expanded") === "true") attemptsInto(detail.cells[0], json);
    if (json.status !== "pending") return;
  }
}

async function showAttempts(w, id, cell, paint) {
  cell.replaceChildren(h("p", { class: "muted" }, "Loading the attempts…"));
  let json;
  try {
    ({ json } = await api("GET", "/webhooks/" + encodeURIComponent(w.id) + "/deliveries/" + encodeURIComponent(id)));
  } catch (e) {
    cell.replaceChildren(h("p", { class: "error", role: "alert" }, show("Could not load the delivery: " + e.message)));
    return;
  }
  paint(json);
  attemptsInto(cell, json);
}

// attemptsInto shows a delivery's attempts and the body it sends; the
// receiver's answer (its excerpt) is text like everything else.
function attemptsInto(cell, d) {
  const log = Array.isArray(d.attempt_log) ? d.attempt_log : [];
  cell.replaceChildren(
    log.length === 0 ? h("p", { class: "muted" }, "No attempt yet.") :
      h("ol", { class: "dl-attempts", "aria-label": "Attempts of " + d.id }, log.map((a) => h("li", { class: "dl-attempt" + (a.verdict === "delivered" ? "" : " failed"), "data-verdict": String(a.verdict ?? "") },
        h("p", {}, h("time", { datetime: a.at }, when(a.at)), " · ",
          h("strong", { class: "dl-http" }, a.status ? "HTTP " + a.status : "no answer"), " · ",
          h("span", { class: "dl-class" }, String(a.class ?? "")), " · ",
          Math.round(Number(a.latency_ms) || 0) + " ms · ", h("span", { class: "dl-verdict" }, String(a.verdict ?? ""))),
        a.error ? h("p", { class: "dl-error" }, data(a.error)) : null,
        a.excerpt ? h("pre", { class: "dl-excerpt", tabindex: "0", "aria-label": "The receiver's answer (first bytes)" }, a.excerpt) : null))),
    h("details", { class: "dl-body" }, h("summary", {}, "The body sent"),
      h("pre", { tabindex: "0" }, d.body === null || d.body === undefined ? "(none)" : JSON.stringify(d.body, null, 2))));
}

// --- routing -------------------------------------------------------------

function route() {
  const hash = location.hash;
  if (hash.startsWith("#login=")) return loginWithCode(decodeURIComponent(hash.slice(7)));
  if (!auth.token) return renderSignIn();
  if (hash !== "#/events") stopEvents();
  dlLive.stop();
  charts.clear();
  for (const a of document.querySelectorAll("#nav a")) {
    const here = a.getAttribute("href") === (hash.startsWith("#/b/") || hash === "" ? "#/" : hash.startsWith("#/webhooks/") ? "#/webhooks" : hash);
    if (here) a.setAttribute("aria-current", "page"); else a.removeAttribute("aria-current");
  }
  const hist = /^#\/b\/(.+)\/history$/.exec(hash);
  if (hist) return renderHistory(decodeURIComponent(hist[1]));
  const m = /^#\/b\/(.+)$/.exec(hash);
  if (m) return renderRecord(decodeURIComponent(m[1]));
  if (hash === "#/events") return renderEvents();
  if (hash === "#/gateway") return renderGateway();
  if (hash === "#/relay") return renderRelay();
  if (hash === "#/webhooks") return renderWebhooks();
  const hook = /^#\/webhooks\/(.+)$/.exec(hash);
  if (hook) return renderWebhook(decodeURIComponent(hook[1]));
  return renderList();
}

window.addEventListener("hashchange", route);
$("signout").addEventListener("click", () => signOut("Signed out."));
if (auth.token) { setChrome(); live.start(); }
route();
