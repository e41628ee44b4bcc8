// The login page: the API key becomes an HttpOnly session cookie.
import { h, replace } from "../dom.js";
import { api } from "../api.js";

export function renderLogin(root, { message, onLogin }) {
  const key = h("input#login-key", { type: "password", name: "key", autocomplete: "current-password", required: true, "aria-describedby": "login-help" });
  const err = h("p.error-box#login-error", { role: "alert", hidden: true });
  const submit = h("button.primary", { type: "submit" }, "Log in");
  const form = h("form.card.login", { "aria-labelledby": "login-title" },
    h("h1#login-title", "N-Agent dashboard"),
    message ? h("p.muted", { role: "status" }, message) : null,
    h("div.field", h("label", { for: "login-key" }, "API key"), key,
      h("small.muted#login-help", "One of the server's API keys (server.api_keys or NAGENT_API_KEYS). It is sent once and kept in an HttpOnly cookie, never in this page.")),
    err,
    h("div.row.end", submit));
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    err.hidden = true;
    submit.disabled = true;
    try {
      const res = await api.post("/api/login", { key: key.value });
      key.value = "";
      onLogin(res.csrf_token);
    } catch (ex) {
      err.textContent = ex.status === 401 ? "That key is not valid. Check it and try again." : ex.message;
      err.hidden = false;
      key.focus();
      key.select();
    } finally {
      submit.disabled = false;
    }
  });
  replace(root, h("main#main", form));
  key.focus();
}
