// The knowledge-base page: list, add (local or Dify), ingest, search, remove.
import { h, replace, fmtTime, toast } from "../dom.js";
import { api, enc } from "../api.js";

export async function render({ main, setReload }) {
  const list = h("div#kb-list");
  const name = h("input#kb-name", { type: "text", required: true, pattern: "[a-z0-9][a-z0-9_-]*" });
  const type = h("select#kb-type", h("option", { value: "local" }, "local (a directory of Markdown and text)"), h("option", { value: "dify" }, "dify (External Knowledge API)"));
  const desc = h("input#kb-description", { type: "text" });
  const dir = h("input#kb-dir", { type: "text", placeholder: "/path/to/docs" });
  const endpoint = h("input#kb-endpoint", { type: "url", placeholder: "https://rag.example.com/api/v1/dify" });
  const kid = h("input#kb-knowledge-id", { type: "text" });
  const secret = h("input#kb-secret", { type: "password", autocomplete: "off" });
  const localFields = h("div", h("div.field", h("label", { for: "kb-dir" }, "Directory"), dir));
  const difyFields = h("div", { hidden: true },
    h("div.field", h("label", { for: "kb-endpoint" }, "Endpoint"), endpoint),
    h("div.field", h("label", { for: "kb-knowledge-id" }, "Knowledge id"), kid),
    h("div.field", h("label", { for: "kb-secret" }, "API key"), secret, h("small.muted", "Stored apart from the configuration and never shown again.")));
  const addOut = h("div", { "aria-live": "polite" });
  const query = h("input#kb-query", { type: "search", required: true });
  const which = h("select#kb-search-kb");
  const results = h("div#kb-results", { "aria-live": "polite" });

  type.addEventListener("change", () => { localFields.hidden = type.value !== "local"; difyFields.hidden = type.value !== "dify"; });

  replace(main,
    h("h1", "Knowledge bases"),
    list,
    h("div.grid2",
      h("section.card", { "aria-labelledby": "kb-add-title" },
        h("h2#kb-add-title", "Add a knowledge base"),
        h("form", { onsubmit: (e) => { e.preventDefault(); add(); } },
          h("div.field", h("label", { for: "kb-name" }, "Name"), name),
          h("div.field", h("label", { for: "kb-type" }, "Type"), type),
          h("div.field", h("label", { for: "kb-description" }, "Description (the model reads it)"), desc),
          localFields, difyFields,
          h("button.primary", { type: "submit" }, "Add")),
        addOut),
      h("section.card", { "aria-labelledby": "kb-search-title" },
        h("h2#kb-search-title", "Search"),
        h("form.toolbar", { role: "search", onsubmit: (e) => { e.preventDefault(); search(); } },
          h("div.field", h("label", { for: "kb-query" }, "Query"), query),
          h("div.field", h("label", { for: "kb-search-kb" }, "Knowledge base"), which),
          h("button", { type: "submit" }, "Search")),
        results)));

  async function load() {
    const res = await api.get("/api/kb");
    const kbs = res.knowledge_bases || [];
    replace(which, h("option", { value: "" }, "all"), kbs.map((k) => h("option", { value: k.name }, k.name)));
    replace(list, kbs.length === 0 ? h("p.empty", "No knowledge bases.") : h("table#kb-table",
      h("thead", h("tr", h("th", "Name"), h("th", "Type"), h("th", "Description"), h("th", "Created"), h("th", h("span.sr-only", "Actions")))),
      h("tbody", kbs.map((k) => h("tr",
        h("td", h("strong", k.name), k.enabled === false ? h("span.muted", " (disabled)") : null),
        h("td", h("span.badge", k.type)), h("td", k.description || ""), h("td", fmtTime(k.created_at)),
        h("td", h("div.row",
          k.type === "local" ? h("button", { type: "button", onclick: () => ingest(k.name) }, "Ingest") : null,
          h("button.danger", { type: "button", "aria-label": `Remove ${k.name}`, onclick: () => remove(k.name) }, "Remove"))))))));
  }

  async function add() {
    const body = { name: name.value.trim(), type: type.value, description: desc.value };
    if (type.value === "local") body.dir = dir.value.trim();
    else Object.assign(body, { endpoint: endpoint.value.trim(), knowledge_id: kid.value.trim(), secret: secret.value });
    try {
      await api.post("/api/kb", body);
      replace(addOut, h("p.ok-box", `Added ${body.name}.`));
      secret.value = "";
      load();
    } catch (err) {
      replace(addOut, h("p.error-box", err.message));
    }
  }

  async function ingest(n) {
    try {
      const res = await api.post(`/api/kb/${enc(n)}/ingest`);
      const r = res.ingest || res;
      const count = (v) => (Array.isArray(v) ? v.length : Number(v) || 0);
      toast(`${n}: ${count(r.added)} added, ${count(r.updated)} updated, ${count(r.removed)} removed, ${count(r.unchanged)} unchanged (${count(r.chunks)} chunks).`, "success");
    } catch (err) {
      toast(err.message, "error");
    }
  }

  async function remove(n) {
    if (!confirm(`Remove the knowledge base ${n}?`)) return;
    try { await api.del(`/api/kb/${enc(n)}`); } catch (err) { toast(err.message, "error"); }
    load();
  }

  async function search() {
    try {
      const r = await api.post("/api/kb/search", { query: query.value, kb: which.value, limit: 5 });
      const rs = r.results || [];
      for (const e of r.errors || []) toast(`${e.kb_name}: ${e.error}`, "error");
      replace(results, rs.length === 0 ? h("p.empty", "Nothing found.") : h("ol", rs.map((x) => h("li",
        h("strong", x.title || x.source || "passage"), " ", h("span.badge", x.kb_name || x.kb || ""), h("span.muted", ` score ${Number(x.score).toFixed(3)}`),
        x.source && x.title ? h("div.muted", x.source) : null,
        h("pre", x.content)))));
    } catch (err) {
      replace(results, h("p.error-box", err.message));
    }
  }

  setReload(load);
  await load();
}
