// Confirmation prompts: a policy "confirm" decision in a dashboard run asks
// here, over the websocket. The dialog opens with Deny focused, so Enter or
// Escape never approves by accident.
import { h, pretty, announce } from "./dom.js";

let socket = null;
const pending = new Map(); // confirmation_id -> request event
const watched = new Map(); // session id -> unsubscribe
let dialog = null;
let current = null;

/** installConfirmations wires the module to the tab's socket. */
export function installConfirmations(s) {
  socket = s;
}

/**
 * watchRun keeps this tab subscribed to a session while a run this tab
 * started is going, so its confirmation requests reach the admin wherever
 * they navigate meanwhile.
 */
export function watchRun(sessionID) {
  if (!socket || watched.has(sessionID)) return;
  const off = socket.subscribe(`session:${sessionID}`, (ev) => {
    if (ev.type === "run_finished") {
      watched.get(sessionID)?.();
      watched.delete(sessionID);
    }
  });
  const offConfirm = socket.subscribe(`session:${sessionID}`, handleConfirmEvent);
  watched.set(sessionID, () => { off(); offConfirm(); });
}

/** handleConfirmEvent takes every event of a session topic. */
export function handleConfirmEvent(ev) {
  if (ev.type === "confirm_request") {
    if (pending.has(ev.confirmation_id)) return;
    if (ev.expires_at && Date.parse(ev.expires_at) < Date.now()) return;
    pending.set(ev.confirmation_id, ev);
    showNext();
  } else if (ev.type === "confirm_resolved") {
    pending.delete(ev.confirmation_id);
    if (current && current.confirmation_id === ev.confirmation_id) {
      closeDialog();
      announce(`Tool call ${ev.approved ? "allowed" : "denied"}${ev.by === "timeout" ? " (no answer in time)" : ""}.`);
      showNext();
    }
  }
}

function showNext() {
  if (current || pending.size === 0) return;
  current = pending.values().next().value;
  const ev = current;
  const deny = h("button.danger.solid#confirm-deny", { type: "button", autofocus: true }, "Deny");
  const allow = h("button#confirm-allow", { type: "button" }, "Allow");
  const countdown = h("span.muted", "");
  const answer = (approved) => {
    if (!socket.send({ type: "confirm_answer", confirmation_id: ev.confirmation_id, approved })) {
      countdown.textContent = "Not connected: the answer could not be sent. It will be denied if the connection does not come back in time.";
      return;
    }
    pending.delete(ev.confirmation_id);
    closeDialog();
    showNext();
  };
  deny.addEventListener("click", () => answer(false));
  allow.addEventListener("click", () => answer(true));
  dialog = h("dialog#confirm-dialog", { "aria-labelledby": "confirm-title", "aria-describedby": "confirm-desc" },
    h("h2#confirm-title", "Allow this tool call?"),
    h("p#confirm-desc", "A policy asks a human to confirm ", h("code", ev.tool?.name || "a tool"),
      ` in session ${ev.session_id}.`),
    ev.reasons?.length ? h("ul", ev.reasons.map((r) => h("li", r))) : null,
    h("h3", "Arguments"),
    h("pre", pretty(ev.tool?.arguments || "{}")),
    h("div.row.end", countdown, allow, deny));
  // Escape answers Deny rather than leaving the call pending.
  dialog.addEventListener("cancel", (e) => { e.preventDefault(); answer(false); });
  document.body.append(dialog);
  dialog.showModal();
  deny.focus();
  if (ev.expires_at) {
    const until = Date.parse(ev.expires_at);
    const tick = () => {
      if (!dialog || current !== ev) return;
      const s = Math.max(0, Math.ceil((until - Date.now()) / 1000));
      countdown.textContent = `Denied automatically in ${s} s`;
      if (s > 0) setTimeout(tick, 1000);
    };
    tick();
  }
}

function closeDialog() {
  if (dialog) { dialog.close(); dialog.remove(); }
  dialog = null;
  current = null;
}
