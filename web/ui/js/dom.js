// Small DOM helpers: h() builds elements, so no view concatenates HTML and
// every piece of server text is inserted as text, never parsed as markup.

/**
 * h("button.primary", {type: "submit", onclick: fn}, "Save") builds an element.
 * The tag may carry .classes and one #id. Attributes whose name starts with
 * "on" become listeners; "class", "for", "aria-*", "data-*" are set as
 * attributes; booleans set or drop the attribute. Children may be strings,
 * nodes, arrays, null or undefined.
 */
export function h(tag, attrs, ...children) {
  const m = /^([a-z0-9-]+)?((?:[.#][\w-]+)*)$/i.exec(tag);
  const el = document.createElement((m && m[1]) || "div");
  if (m && m[2]) {
    for (const part of m[2].match(/[.#][\w-]+/g)) {
      if (part[0] === ".") el.classList.add(part.slice(1));
      else el.id = part.slice(1);
    }
  }
  if (attrs && (typeof attrs !== "object" || attrs instanceof Node || Array.isArray(attrs))) {
    children.unshift(attrs);
    attrs = null;
  }
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on") && typeof v === "function") {
      el.addEventListener(k.slice(2).toLowerCase(), v);
    } else if (k === "value" && "value" in el) {
      el.value = v;
    } else if (k === "checked" || k === "selected") {
      el[k] = Boolean(v);
    } else if (k === "class" && Array.isArray(v)) {
      el.className = v.filter(Boolean).join(" ");
    } else if (v === true) {
      el.setAttribute(k, "");
    } else {
      el.setAttribute(k, String(v));
    }
  }
  append(el, children);
  return el;
}

/** append adds children (strings, nodes, nested arrays) to el. */
export function append(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

/** clear removes every child of el and appends the given ones. */
export function replace(el, ...children) {
  el.replaceChildren();
  return append(el, children);
}

/** fmtTime renders an ISO time or unix ms as a short local date and time. */
export function fmtTime(v) {
  if (!v) return "";
  const d = typeof v === "number" ? new Date(v) : new Date(String(v));
  if (Number.isNaN(d.getTime())) return String(v);
  return d.toLocaleString(undefined, { year: "numeric", month: "short", day: "numeric", hour: "2-digit", minute: "2-digit", second: "2-digit" });
}

/** fmtMS renders a duration in milliseconds. */
export function fmtMS(ms) {
  if (ms === undefined || ms === null || ms === "") return "";
  const n = Number(ms);
  if (n < 1000) return `${n} ms`;
  if (n < 60000) return `${(n / 1000).toFixed(n < 10000 ? 2 : 1)} s`;
  return `${Math.floor(n / 60000)} min ${Math.round((n % 60000) / 1000)} s`;
}

/** pretty formats a JSON string or value for display; other text is kept. */
export function pretty(v) {
  if (v === undefined || v === null) return "";
  if (typeof v === "string") {
    const t = v.trim();
    if (t.startsWith("{") || t.startsWith("[")) {
      try { return JSON.stringify(JSON.parse(t), null, 2); } catch { return v; }
    }
    return v;
  }
  return JSON.stringify(v, null, 2);
}

/** debounce returns fn delayed until ms pass without another call. */
export function debounce(fn, ms) {
  let t;
  return (...args) => { clearTimeout(t); t = setTimeout(() => fn(...args), ms); };
}

/** announce speaks a short message through the polite live region. */
export function announce(msg) {
  const el = document.getElementById("announcer");
  if (!el) return;
  el.textContent = "";
  setTimeout(() => { el.textContent = msg; }, 30);
}

/** toast shows a transient status message (errors stay until dismissed). */
export function toast(msg, kind = "info") {
  const box = document.getElementById("toasts");
  if (!box) return;
  const close = h("button.icon", { type: "button", "aria-label": "Dismiss" }, "×");
  const el = h(`div.toast.${kind}`, { role: kind === "error" ? "alert" : "status" }, h("span", msg), close);
  close.addEventListener("click", () => el.remove());
  box.append(el);
  if (kind !== "error") setTimeout(() => el.remove(), 4000);
}
