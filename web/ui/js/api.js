// The management API client: JSON in and out, the CSRF token on every
// state-changing request, and one error type carrying the server's code.

/** APIError is a failed /api call: status, code, message, field, problems. */
export class APIError extends Error {
  constructor(status, body) {
    const e = (body && body.error) || {};
    super(e.message || `request failed with HTTP ${status}`);
    this.status = status;
    this.code = e.code || "internal";
    this.field = e.field || "";
    this.problems = e.problems || [];
  }
}

let csrfToken = "";
let onUnauthorized = () => {};

/** setCSRF stores the token from /api/auth or /api/login. */
export function setCSRF(token) { csrfToken = token || ""; }

/** setUnauthorizedHandler is called when any request answers 401. */
export function setUnauthorizedHandler(fn) { onUnauthorized = fn; }

/**
 * request performs one call. body may be a plain object (sent as JSON) or a
 * FormData (sent as multipart). It resolves to the parsed JSON answer (or
 * null for 204) and rejects with an APIError.
 */
export async function request(method, path, body, { signal } = {}) {
  const headers = { Accept: "application/json" };
  const init = { method, headers, credentials: "same-origin", signal };
  if (method !== "GET" && method !== "HEAD") headers["X-CSRF-Token"] = csrfToken;
  if (body instanceof FormData) {
    init.body = body;
  } else if (body !== undefined) {
    headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  let resp;
  try {
    resp = await fetch(path, init);
  } catch (err) {
    if (err.name === "AbortError") throw err;
    throw new APIError(0, { error: { code: "unavailable", message: "the server cannot be reached; it may be restarting" } });
  }
  if (resp.status === 204) return null;
  let data = null;
  const text = await resp.text();
  if (text) {
    try { data = JSON.parse(text); } catch { data = { error: { code: "internal", message: text.slice(0, 300) } }; }
  }
  if (!resp.ok) {
    const err = new APIError(resp.status, data);
    if (resp.status === 401 && !path.startsWith("/api/login")) onUnauthorized(err);
    throw err;
  }
  return data;
}

/** qs builds a query string from the non-empty values of params. */
export function qs(params) {
  const u = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== "") u.set(k, String(v));
  const s = u.toString();
  return s ? `?${s}` : "";
}

export const api = {
  get: (path, opts) => request("GET", path, undefined, opts),
  post: (path, body, opts) => request("POST", path, body ?? {}, opts),
  put: (path, body, opts) => request("PUT", path, body, opts),
  del: (path, opts) => request("DELETE", path, undefined, opts),
};

/** enc escapes one path segment. */
export const enc = encodeURIComponent;
