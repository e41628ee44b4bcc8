// The policy page: files, an editor with line numbers whose saves are
// compiled first (errors point at their lines), the evaluate panel, the
// decision audit trail, and the active revision with the last reload error.
import { h, replace, fmtTime, pretty, toast, announce } from "../dom.js";
import { api, qs, enc } from "../api.js";
import { codeEditor } from "../editor.js";

const sampleInput = {
  phase: "call",
  tool: { name: "get_current_time", source_type: "builtin", risk_level: "safe", managed: false, disabled: false },
  args: {},
  session: { id: "sess_example", source: "dashboard" },
  agent_context: "primary",
  tool_exposure_policy: "default",
  execution_context_mode: "",
  trusted_metadata: {},
  permitted_managed_tools: [],
  time: new Date().toISOString(),
};

const newFileTemplate = `package nagent.tools

import rego.v1

# deny contains "reason the model will read" if input.tool.name == "some_tool"
`;

export async function render({ main, params, socket, setReload }) {
  const status = h("div.card#policy-status", { "aria-live": "polite" }, h("p.muted", "Loading…"));
  const fileList = h("ul.filelist#policy-files");
  const fileName = h("input#policy-file-name", { type: "text", placeholder: "my_rules.rego", "aria-describedby": "policy-name-help", spellcheck: "false" });
  const ed = codeEditor({ id: "policy-source", label: "Policy source" });
  const errors = h("div#policy-errors", { role: "alert" });
  const save = h("button.primary#policy-save", { type: "button" }, "Save");
  const del = h("button.danger#policy-delete", { type: "button" }, "Delete");
  const readOnlyNote = h("p.muted#policy-readonly", { hidden: true }, "Built-in policy: read only. Add your own rules in a new file.");
  const savedNote = h("span.muted#policy-saved", { role: "status" }, "");

  const evalKind = h("select#eval-kind", h("option", { value: "tools" }, "tools (nagent.tools)"), h("option", { value: "memory" }, "memory (nagent.memory)"));
  const evalInput = codeEditor({ id: "eval-input", label: "Input document (JSON)", value: JSON.stringify(sampleInput, null, 2) });
  evalInput.el.style.height = "260px";
  const evalBtn = h("button#eval-run", { type: "button" }, "Evaluate");
  const evalOut = h("div#eval-result", { "aria-live": "polite" });

  const auditSession = h("input#audit-session", { type: "text", placeholder: "session id (optional)" });
  const auditLimit = h("select#audit-limit", [50, 100, 500].map((n) => h("option", { value: n }, String(n))));
  const auditBody = h("div#audit-trail");

  replace(main,
    h("h1", "Policies"),
    status,
    h("div.policy-layout",
      h("section.card", { "aria-labelledby": "files-title" },
        h("h2#files-title", "Files"), fileList,
        h("div.field", h("label", { for: "policy-file-name" }, "File name"), fileName,
          h("small.muted#policy-name-help", "A .rego file, data.json or data.yaml in the policies directory. Type a new name to create a file."))),
      h("section", { "aria-labelledby": "editor-title" },
        h("h2#editor-title", "Editor"),
        readOnlyNote, ed.el, errors,
        h("div.row", savedNote, h("span.grow"), del, save))),
    h("div.grid2",
      h("section.card", { "aria-labelledby": "eval-title" },
        h("h2#eval-title", "Evaluate"),
        h("div.field", h("label", { for: "eval-kind" }, "Policy"), evalKind),
        evalInput.el,
        h("div.row", evalBtn), evalOut),
      h("section.card", { "aria-labelledby": "audit-title" },
        h("h2#audit-title", "Decision audit trail"),
        h("form.toolbar", { onsubmit: (e) => { e.preventDefault(); loadAudit(); } },
          h("div.field", h("label", { for: "audit-session" }, "Session"), auditSession),
          h("div.field", h("label", { for: "audit-limit" }, "Show"), auditLimit),
          h("button", { type: "submit" }, "Refresh")),
        auditBody)));

  let current = { name: "", source: "admin", read_only: false };
  let files = [];

  function showStatus(revision, lastError) {
    replace(status,
      h("div.row", h("strong", "Active revision"), h("code#policy-revision", revision || "—")),
      lastError
        ? h("div.error-box#policy-reload-error", h("strong", "The last reload failed; the previous policy stays active. "), lastError.message,
          problemsList(lastError.problems || []))
        : h("p.muted#policy-reload-ok", "The last reload succeeded."));
  }

  function problemsList(problems, { jump = false } = {}) {
    if (!problems.length) return null;
    return h("ul.errors", problems.map((p) => {
      const where = `${p.file || ""}${p.line ? `:${p.line}` : ""}`;
      const text = `${p.code ? p.code + ": " : ""}${p.message}`;
      const sameFile = !p.file || p.file === current.name;
      return h("li", { "data-line": p.line || "" },
        jump && p.line && sameFile
          ? h("button.link", { type: "button", onclick: () => ed.jumpTo(p.line) }, `Line ${p.line}`)
          : h("span", where ? `${where}` : "—"),
        ": ", text);
    }));
  }

  async function loadList() {
    const res = await api.get("/api/policies");
    files = res.files || [];
    showStatus(res.revision, res.last_error);
    replace(fileList, files.length === 0 ? h("li.muted", "No files.") : files.map((f) => h("li",
      h("button.link", {
        type: "button", "data-file": f.name, "data-source": f.source,
        "aria-current": f.name === current.name && f.source === current.source ? "true" : null,
        onclick: () => openFile(f.name, f.source),
      }, f.name),
      " ", h("span.badge", f.source), f.read_only ? h("span.muted", " read only") : null)));
  }

  async function openFile(name, source = "admin") {
    errors.replaceChildren();
    ed.setErrors([]);
    savedNote.textContent = "";
    try {
      const f = await api.get("/api/policies/file" + qs({ name, source }));
      current = { name: f.name, source: f.source, read_only: f.read_only };
      ed.value = f.content;
    } catch (err) {
      if (err.status !== 404) { toast(err.message, "error"); return; }
      current = { name, source: "admin", read_only: false };
      ed.value = name.endsWith(".rego") ? newFileTemplate : "";
    }
    fileName.value = current.name;
    ed.textarea.readOnly = current.read_only;
    readOnlyNote.hidden = !current.read_only;
    save.disabled = current.read_only;
    del.disabled = current.read_only;
    history.replaceState(null, "", "/policies" + qs({ file: current.name, source: current.source === "admin" ? "" : current.source }));
    for (const b of fileList.querySelectorAll("button[data-file]")) {
      if (b.dataset.file === current.name && b.dataset.source === current.source) b.setAttribute("aria-current", "true");
      else b.removeAttribute("aria-current");
    }
  }

  fileName.addEventListener("change", () => {
    // An existing file opens; a new name keeps what is in the editor.
    const n = fileName.value.trim();
    if (n && n !== current.name && files.some((f) => f.name === n && f.source === "admin")) openFile(n, "admin");
  });

  save.addEventListener("click", async () => {
    const name = fileName.value.trim();
    errors.replaceChildren();
    ed.setErrors([]);
    savedNote.textContent = "";
    if (!name) { errors.append(h("p.error-box", "Give the file a name, e.g. my_rules.rego.")); fileName.focus(); return; }
    if (name !== current.name) current = { name, source: "admin", read_only: false };
    save.disabled = true;
    try {
      const res = await api.put("/api/policies/file", { name, content: ed.value });
      savedNote.textContent = `Saved; active revision ${res.revision}.`;
      announce("Policy saved.");
      await loadList();
    } catch (err) {
      const problems = err.problems || [];
      ed.setErrors(problems.filter((p) => !p.file || p.file === name).map((p) => p.line));
      replace(errors, h("div.error-box",
        h("strong", "Not saved. "), err.message,
        problemsList(problems, { jump: true })));
      const first = problems.find((p) => (!p.file || p.file === name) && p.line);
      if (first) ed.jumpTo(first.line);
    } finally {
      save.disabled = current.read_only;
    }
  });

  del.addEventListener("click", async () => {
    if (!current.name || current.read_only) return;
    if (!confirm(`Delete ${current.name}?`)) return;
    try {
      await api.del("/api/policies/file" + qs({ name: current.name }));
      toast(`${current.name} deleted.`, "success");
      current = { name: "", source: "admin", read_only: false };
      fileName.value = "";
      ed.value = "";
      await loadList();
    } catch (err) {
      replace(errors, h("div.error-box", err.message, problemsList(err.problems || [])));
    }
  });

  evalBtn.addEventListener("click", async () => {
    let input;
    try { input = JSON.parse(evalInput.value); } catch (err) {
      replace(evalOut, h("p.error-box", `The input is not valid JSON: ${err.message}`));
      return;
    }
    try {
      const res = await api.post("/api/policies/eval", { kind: evalKind.value, input });
      const d = res.decision || {};
      replace(evalOut,
        h("p", h(`span.badge.${d.allow ? "allow" : "deny"}`, d.allow ? "allow" : "deny"),
          d.confirm ? [" ", h("span.badge.confirm", "confirm")] : null),
        (d.reasons || []).length ? h("ul", d.reasons.map((r) => h("li", r))) : null,
        h("pre", pretty(d)));
    } catch (err) {
      replace(evalOut, h("p.error-box", err.message));
    }
  });

  async function loadAudit() {
    try {
      const res = await api.get("/api/policies/decisions" + qs({ session_id: auditSession.value.trim(), limit: auditLimit.value }));
      const ds = res.decisions || [];
      replace(auditBody, ds.length === 0 ? h("p.empty", "No decisions recorded.") : h("table#audit-table",
        h("thead", h("tr", h("th", "When"), h("th", "Tool"), h("th", "Phase"), h("th", "Decision"), h("th", "Reasons"), h("th", "Session"))),
        h("tbody", ds.map((d) => h("tr",
          h("td", fmtTime(d.created_at)),
          h("td", h("code", d.tool)),
          h("td", d.phase),
          h("td", h(`span.badge.${d.allow ? (d.confirm ? "confirm" : "allow") : "deny"}`, d.allow ? (d.confirm ? "confirm" : "allow") : "deny")),
          h("td", (d.reasons || []).join("; ") || (d.error ? `error: ${d.error}` : "")),
          h("td", d.session_id ? h("a", { href: `/chat?session=${enc(d.session_id)}` }, d.session_id) : ""))))));
    } catch (err) {
      replace(auditBody, h("p.error-box", err.message));
    }
  }

  const off = socket.subscribe("policy", (ev) => {
    if (ev.type !== "policy_reloaded") return;
    showStatus(ev.revision, ev.error);
    if (ev.error) toast(`Policy reload failed: ${ev.error.message}`, "error");
    loadList().catch(() => {});
  });
  setReload(() => loadList());

  await loadList();
  const want = params.get("file");
  if (want) await openFile(want, params.get("source") || "admin");
  else {
    const firstAdmin = files.find((f) => !f.read_only);
    if (firstAdmin) await openFile(firstAdmin.name, firstAdmin.source);
    else { fileName.value = ""; ed.value = newFileTemplate; }
  }
  loadAudit();
  return off;
}
