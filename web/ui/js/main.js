// The dashboard's entry point: login, the page shell, the router and the
// one websocket shared by every view.
import { h, replace, announce, toast, debounce } from "./dom.js";
import { api, setCSRF, setUnauthorizedHandler } from "./api.js";
import { Socket } from "./ws.js";
import { installConfirmations } from "./confirm.js";
import { renderLogin } from "./views/login.js";

// importView loads a view module. The browser remembers a failed module
// fetch (the server was restarting) for the life of the page, so a retry
// asks for the same file under a fresh query string.
async function importView(path) {
  try {
    return await import(path);
  } catch {
    await new Promise((r) => setTimeout(r, 500));
    return import(`${path}?retry=${Date.now()}`);
  }
}

// Each page: path, nav label, module (loaded on first visit).
const pages = [
  { path: "/sessions", label: "Sessions", load: () => importView("./views/sessions.js") },
  { path: "/chat", label: "New chat", load: () => importView("./views/chat.js") },
  { path: "/policies", label: "Policies", load: () => importView("./views/policies.js") },
  { path: "/sandboxes", label: "Sandboxes", load: () => importView("./views/sandboxes.js") },
  { path: "/plugins", label: "Plugins", load: () => importView("./views/plugins.js") },
  { path: "/memory", label: "Memory", load: () => importView("./views/memory.js") },
  { path: "/skills", label: "Skills", load: () => importView("./views/skills.js") },
  { path: "/kb", label: "Knowledge", load: () => importView("./views/kb.js") },
  { path: "/mcp", label: "MCP sites", load: () => importView("./views/mcp.js") },
  { path: "/schedules", label: "Schedules", load: () => importView("./views/schedules.js") },
  { path: "/inbox", label: "Inbox", load: () => importView("./views/inbox.js") },
];

const app = document.getElementById("app");
const socket = new Socket();
// A handle for the browser console and the browser tests.
window.nagent = { socket };
let authInfo = { auth_required: false };
let shell = null;
let cleanup = null;
let renderSeq = 0;

/** navigate changes the route without reloading the page. */
export function navigate(url, { replace: rep = false } = {}) {
  if (rep) history.replaceState(null, "", url);
  else history.pushState(null, "", url);
  route();
}

async function boot() {
  setUnauthorizedHandler(() => showLogin("Your login has expired; log in again."));
  try {
    authInfo = await api.get("/api/auth");
  } catch (err) {
    replace(app, h("div.login.card", h("h1", "N-Agent"), h("p.error-box", { role: "alert" }, `The dashboard cannot reach the server: ${err.message}`),
      h("button", { type: "button", onclick: () => location.reload() }, "Retry")));
    app.removeAttribute("aria-busy");
    return;
  }
  if (!authInfo.authenticated) return showLogin();
  setCSRF(authInfo.csrf_token);
  startShell();
}

function showLogin(message) {
  socket.stop();
  shell = null;
  if (cleanup) { try { cleanup(); } catch { /* view already gone */ } cleanup = null; }
  app.removeAttribute("aria-busy");
  renderLogin(app, {
    message,
    onLogin: (token) => {
      setCSRF(token);
      authInfo.authenticated = true;
      startShell();
    },
  });
}

async function logout() {
  try { await api.post("/api/logout"); } catch { /* the cookie is cleared anyway */ }
  setCSRF("");
  authInfo.authenticated = false;
  showLogin("You are logged out.");
}

function startShell() {
  const conn = h("span.conn#conn-status", { role: "status", "aria-live": "polite", "data-state": "connecting" }, "Connecting…");
  const retry = h("button.link#conn-retry", { type: "button", hidden: true, onclick: () => socket.reconnectNow() }, "Retry now");
  const nav = h("nav.side", { "aria-label": "Main" },
    h("ul", pages.map((p) => h("li", h("a", { href: p.path, "data-path": p.path }, p.label,
      p.path === "/inbox" ? h("span.badge.unread.nav-count#inbox-count-nav", { hidden: true }) : null)))));
  nav.addEventListener("click", (e) => {
    const a = e.target.closest("a[href]");
    if (!a || e.ctrlKey || e.metaKey || e.shiftKey || e.button !== 0) return;
    e.preventDefault();
    navigate(a.getAttribute("href"));
  });
  const main = h("main#main", { tabindex: "-1" });
  const header = h("header.top",
    h("span.brand", "N-Agent"),
    h("span.muted#server-model", ""),
    h("span.spacer"),
    conn, retry,
    authInfo.auth_required ? h("button#logout", { type: "button", onclick: logout }, "Log out") : null);
  shell = { main, nav, conn };
  replace(app, h("div.shell", header, nav, main));
  app.removeAttribute("aria-busy");

  // The status text changes only with the state (it is a live region); the
  // seconds until the next attempt tick in a separate, aria-hidden span.
  const connLabel = h("span", "Connecting…");
  const countdown = h("span.muted", { "aria-hidden": "true" });
  conn.replaceChildren(connLabel, countdown);
  const labels = { open: "Connected", connecting: "Connecting…", reconnecting: "Reconnecting…", closed: "Disconnected" };
  let retryTick = null;
  socket.onState((state, s) => {
    conn.dataset.state = state;
    clearInterval(retryTick);
    retry.hidden = state !== "reconnecting";
    if (connLabel.textContent !== labels[state]) connLabel.textContent = labels[state];
    countdown.textContent = "";
    if (state === "reconnecting") {
      const tick = () => {
        const secs = Math.max(0, Math.ceil((s.retryAt - Date.now()) / 1000));
        countdown.textContent = secs > 0 ? ` next try in ${secs} s` : "";
      };
      tick();
      retryTick = setInterval(tick, 1000);
    }
  });
  // A socket that keeps failing may mean the login is gone (server data
  // reset): ask /api/auth every third attempt.
  socket.onReconnectScheduled(async (attempt) => {
    if (attempt % 3 !== 0) return;
    try {
      const a = await api.get("/api/auth");
      if (a.auth_required && !a.authenticated) showLogin("Your login is no longer valid; log in again.");
    } catch { /* server still down */ }
  });
  // Lost events (a restart, an overflow) make the current page reload its
  // state over /api; gaps of several topics arrive together, so debounce.
  socket.onGap(debounce(() => { if (shell && shell.reload) shell.reload(); }, 250));
  installConfirmations(socket);
  socket.start();
  loadStatus();
  watchInbox();
  route();
}

// watchInbox keeps the unread count next to Inbox in the menu.
let inboxWatched = false;
function watchInbox() {
  if (inboxWatched) return;
  inboxWatched = true;
  const show = (n) => {
    const el = document.getElementById("inbox-count-nav");
    if (!el) return;
    el.hidden = !n;
    el.textContent = n ? String(n) : "";
    el.setAttribute("aria-label", `${n} unread`);
  };
  const load = debounce(async () => {
    try { show((await api.get("/api/inbox?unread=true&limit=1")).unread); } catch { /* shown elsewhere */ }
  }, 300);
  window.addEventListener("nagent:inbox", (e) => show(e.detail.unread));
  socket.subscribe("inbox", () => load());
  load();
}

async function loadStatus() {
  try {
    const st = await api.get("/api/status");
    const el = document.getElementById("server-model");
    if (el) el.textContent = st.model ? `model ${st.model}` : (st.model_error ? "no model configured" : "");
  } catch { /* shown elsewhere */ }
}

function currentPage() {
  const path = location.pathname === "/" ? "/sessions" : location.pathname.replace(/\/+$/, "");
  return pages.find((p) => path === p.path || path.startsWith(p.path + "/")) || null;
}

// markNav marks the menu entry of the current location. Views that rewrite
// the URL in place dispatch "nagent:location" to have it run again.
function markNav() {
  if (!shell) return;
  const page = currentPage();
  // A stored session's conversation belongs under Sessions in the menu.
  const current = page && page.path === "/chat" && location.search.includes("session=") ? "/sessions" : page && page.path;
  for (const a of shell.nav.querySelectorAll("a")) {
    if (page && a.dataset.path === current) a.setAttribute("aria-current", "page");
    else a.removeAttribute("aria-current");
  }
}
window.addEventListener("nagent:location", markNav);

async function route() {
  if (!shell) return;
  const page = currentPage();
  markNav();
  if (cleanup) { try { cleanup(); } catch (err) { console.error(err); } cleanup = null; }
  const seq = ++renderSeq;
  const main = shell.main;
  if (!page) {
    replace(main, h("h1", "Not found"), h("p", "No page here. ", h("a", { href: "/sessions" }, "Go to the sessions.")));
    return;
  }
  replace(main, h("p.muted", "Loading…"));
  const params = new URLSearchParams(location.search);
  try {
    const mod = await page.load();
    if (seq !== renderSeq) return;
    main.replaceChildren();
    const ctx = { main, params, socket, navigate, setReload: (fn) => { shell.reload = fn; } };
    shell.reload = null;
    cleanup = (await mod.render(ctx)) || null;
    if (seq !== renderSeq && cleanup) { cleanup(); cleanup = null; }
    const h1 = main.querySelector("h1");
    // A stored session's tab is titled by the session, not "New chat".
    const named = page.path === "/chat" && params.get("session") && h1 && h1.textContent.trim();
    document.title = `${named || page.label} · N-Agent`;
    if (h1) announce(h1.textContent);
    // After a menu click, keyboard focus moves to the new page (unless the
    // view focused a field of its own), so Tab continues in the content.
    const active = document.activeElement;
    if (!active || active === document.body || shell.nav.contains(active)) main.focus({ preventScroll: true });
  } catch (err) {
    if (seq !== renderSeq) return;
    console.error(err);
    replace(main, h("h1", page.label), h("p.error-box", { role: "alert" }, err.message || String(err)));
  }
}

window.addEventListener("popstate", route);
// Links inside views that point at our own pages route without reloading.
document.addEventListener("click", (e) => {
  const a = e.target.closest && e.target.closest("a[href^='/']");
  if (!a || a.target || a.hasAttribute("download") || e.ctrlKey || e.metaKey || e.shiftKey || e.button !== 0) return;
  if (a.closest("nav.side")) return;
  if (a.getAttribute("href").startsWith("/api/") || a.getAttribute("href").startsWith("/assets/")) return;
  e.preventDefault();
  navigate(a.getAttribute("href"));
});
window.addEventListener("unhandledrejection", (e) => {
  if (e.reason && e.reason.name === "AbortError") return;
  toast(e.reason && e.reason.message ? e.reason.message : String(e.reason), "error");
});

boot();
