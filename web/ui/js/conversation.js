// Rendering of a conversation: stored messages and tool-call records from
// /api/sessions/{id}, and live run events from the websocket, both into the
// same elements, so a turn looks the same streamed or reloaded.
import { h, fmtMS, pretty } from "./dom.js";

const statusLabel = {
  success: "success", ok: "success", error: "error", timeout: "timed out",
  denied: "denied", running: "running", cancelled: "cancelled",
};

/**
 * toolCard builds a collapsible card for one tool call:
 * {id, name, arguments, status, content, duration_ms, error}.
 */
export function toolCard(call) {
  const badge = h("span.badge", "");
  const dur = h("span.dur", "");
  const argsPre = h("pre.tool-args", "");
  const resultTitle = h("h4", "Result");
  const resultPre = h("pre.tool-result", "");
  const el = h("details.tool", { "data-tool": call.name, "data-call-id": call.id || "" },
    h("summary", h("span.tool-name", call.name || "tool"), badge, dur),
    h("div.tool-body",
      h("h4", "Arguments"), argsPre,
      resultTitle, resultPre));
  el.update = (c) => {
    Object.assign(call, Object.fromEntries(Object.entries(c).filter(([, v]) => v !== undefined && v !== "")));
    const status = call.status || "running";
    el.dataset.status = status;
    badge.className = `badge ${status}`;
    badge.textContent = status === "denied" ? "⊘ denied" : (statusLabel[status] || status);
    el.querySelector("summary").setAttribute("aria-label",
      `Tool ${call.name}, ${statusLabel[status] || status}${status !== "running" ? `, ${call.duration_ms ? fmtMS(call.duration_ms) : "under 1 ms"}` : ""}`);
    dur.textContent = status === "running" ? "…" : (call.duration_ms ? fmtMS(call.duration_ms) : "< 1 ms");
    argsPre.textContent = pretty(call.arguments || "{}");
    const result = call.content || call.result || call.error || "";
    resultTitle.textContent = status === "denied" ? "Denied because" : (status === "running" ? "Result (waiting…)" : "Result");
    resultPre.textContent = pretty(result);
    resultPre.hidden = status === "running" && !result;
  };
  el.update({});
  // A denial is opened at once: the admin should see why without a click.
  if (call.status === "denied") el.open = true;
  return el;
}

/** messageEl builds one user or assistant message. */
export function messageEl(role, content, { streaming = false, reasoning = "", error = false } = {}) {
  const text = h("div.text", content || "");
  const reason = h("details.reasoning", { hidden: !reasoning }, h("summary.muted", "Reasoning"), h("pre", reasoning));
  const el = h(`div.msg.${role}`, { "data-role": role },
    h("div.who", role === "user" ? "You" : role === "assistant" ? "Assistant" : role),
    reason, text);
  if (error) el.classList.add("error");
  if (streaming) { el.classList.add("streaming"); el.setAttribute("aria-busy", "true"); }
  el.appendText = (s) => { text.textContent += s; };
  el.appendReasoning = (s) => { reason.hidden = false; reason.querySelector("pre").textContent += s; };
  el.finish = () => { el.classList.remove("streaming"); el.removeAttribute("aria-busy"); };
  el.text = text;
  return el;
}

/**
 * renderHistory turns a session detail into elements: user and assistant
 * messages, with a card after each assistant message for each of its tool
 * calls (taking status, result and duration from the tool-call records).
 */
export function renderHistory(detail) {
  const records = new Map((detail.tool_calls || []).map((r) => [r.id, r]));
  const toolMessages = new Map();
  for (const m of detail.messages || []) if (m.role === "tool" && m.tool_call_id) toolMessages.set(m.tool_call_id, m);
  const out = [];
  for (const m of detail.messages || []) {
    if (m.role === "user") {
      out.push(messageEl("user", m.content));
    } else if (m.role === "assistant") {
      if (m.content || m.reasoning_content || !(m.tool_calls || []).length) {
        out.push(messageEl("assistant", m.content, { reasoning: m.reasoning_content, error: m.status === "error" || m.status === "failed" }));
      }
      for (const tc of m.tool_calls || []) {
        const id = tc.id;
        const fn = tc.function || tc;
        const rec = records.get(id) || {};
        const tm = toolMessages.get(id) || {};
        out.push(toolCard({
          id, name: fn.name || rec.name, arguments: fn.arguments ?? rec.arguments,
          status: rec.status || tm.status || "success",
          content: rec.result || tm.content || "", error: rec.error, duration_ms: rec.duration_ms,
        }));
      }
    }
  }
  return out;
}
