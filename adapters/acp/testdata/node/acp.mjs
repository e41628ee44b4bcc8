// Drives `nagent acp` with the official ACP TypeScript client
// (@agentclientprotocol/sdk). Run by adapters/acp/e2e_test.go:
//
//   node acp.mjs <scenario>
//
// with NAGENT_BIN (the binary), NAGENT_HOME and NAGENT_LLM_* (its
// environment) and MCP_EVERYTHING (the server-everything command). Each
// scenario asserts on what the client received; the SDK drops updates that
// fail the protocol schema, so a malformed update shows up as a missing one.
// The last stdout line is a JSON summary for the Go test.
import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import assert from "node:assert/strict";
import { client, methods, ndJsonStream } from "@agentclientprotocol/sdk";

const bin = process.env.NAGENT_BIN;
assert.ok(bin, "NAGENT_BIN is not set");

// startAgent runs `nagent acp` and returns an ACP client bound to it. The
// updates it receives are collected per session; requestPermission answers
// session/request_permission.
function startAgent({ requestPermission } = {}) {
  const child = spawn(bin, ["acp"], { stdio: ["pipe", "pipe", "pipe"], env: process.env });
  let stderr = "";
  child.stderr.on("data", (d) => {
    stderr += d;
    if (process.env.ACP_DEBUG) process.stderr.write(d); // nagent's log
  });
  const exited = new Promise((resolve) => child.on("exit", (code) => resolve(code)));
  const updates = [];
  const permissions = [];
  const waiters = new Set();
  // waitFor resolves once pred(update) holds for an update from index from on.
  const waitFor = (pred, from = 0) =>
    new Promise((resolve) => {
      const check = () => {
        const i = updates.findIndex((u, j) => j >= from && pred(u));
        if (i >= 0) {
          waiters.delete(check);
          resolve(i);
        }
      };
      waiters.add(check);
      check();
    });
  const app = client({ name: "nagent-acp-e2e" })
    .onNotification(methods.client.session.update, ({ params }) => {
      updates.push(params);
      for (const w of [...waiters]) w();
    })
    .onRequest(methods.client.session.requestPermission, async (ctx) => {
      permissions.push(ctx.params);
      if (!requestPermission) return { outcome: { outcome: "cancelled" } };
      return requestPermission(ctx);
    });
  const stream = ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
  const run = (op) => app.connectWith(stream, op);
  const stop = async () => {
    child.stdin.end();
    const code = await exited;
    return { code, stderr };
  };
  return { run, stop, updates, permissions, waitFor, child, get stderr() { return stderr; } };
}

const initParams = {
  protocolVersion: 1,
  clientCapabilities: { fs: { readTextFile: true, writeTextFile: false }, terminal: true },
  clientInfo: { name: "nagent-acp-e2e", version: "1.0.0" },
};

const kinds = (updates, sessionId) =>
  updates.filter((n) => n.sessionId === sessionId).map((n) => n.update.sessionUpdate);
const textOf = (updates, sessionId, kind) =>
  updates
    .filter((n) => n.sessionId === sessionId && n.update.sessionUpdate === kind)
    .map((n) => n.update.content.text)
    .join("");
const toolUpdates = (updates, sessionId, id) =>
  updates.filter(
    (n) =>
      n.sessionId === sessionId &&
      (n.update.sessionUpdate === "tool_call" || n.update.sessionUpdate === "tool_call_update") &&
      n.update.toolCallId === id,
  ).map((n) => n.update);

function assertToolTurn(updates, sessionId, id, { status, kind, contentPart }) {
  const tu = toolUpdates(updates, sessionId, id);
  assert.equal(tu.length, 2, `tool ${id}: want tool_call then tool_call_update, got ${JSON.stringify(tu)}`);
  assert.equal(tu[0].sessionUpdate, "tool_call");
  assert.ok(tu[0].title.length > 0, "tool_call has a title");
  if (kind) assert.equal(tu[0].kind, kind);
  assert.equal(tu[1].sessionUpdate, "tool_call_update");
  assert.equal(tu[1].status, status, `tool ${id} status`);
  if (contentPart) {
    const text = (tu[1].content ?? []).map((c) => c.content?.text ?? "").join("");
    assert.ok(text.includes(contentPart), `tool ${id} content ${JSON.stringify(text)} lacks ${JSON.stringify(contentPart)}`);
  }
  return tu;
}

const scenarios = {
  async initialize() {
    const a = startAgent();
    const res = await a.run((ctx) => ctx.request(methods.agent.initialize, initParams));
    assert.equal(res.protocolVersion, 1);
    assert.equal(res.agentCapabilities.loadSession, true);
    assert.equal(res.agentCapabilities.promptCapabilities.embeddedContext, true);
    assert.equal(res.agentCapabilities.promptCapabilities.image, false);
    assert.equal(res.agentCapabilities.mcpCapabilities.http, true);
    assert.equal(res.agentInfo.name, "nagent");
    const { code } = await a.stop();
    assert.equal(code, 0, "nagent acp exits 0 when stdin closes");
    return { protocolVersion: res.protocolVersion };
  },

  async text() {
    const a = startAgent();
    const out = await a.run(async (ctx) => {
      await ctx.request(methods.agent.initialize, initParams);
      const { sessionId } = await ctx.request(methods.agent.session.new, { cwd: process.cwd(), mcpServers: [] });
      const res = await ctx.request(methods.agent.session.prompt, {
        sessionId,
        prompt: [
          { type: "text", text: "Summarise the file." },
          { type: "resource", resource: { uri: "file:///repo/notes.md", mimeType: "text/markdown", text: "kestrel runs in eu-west-1" } },
          { type: "resource_link", uri: "file:///repo/README.md", name: "README.md" },
        ],
      });
      return { sessionId, stopReason: res.stopReason };
    });
    assert.equal(out.stopReason, "end_turn");
    const chunks = a.updates.filter((n) => n.update.sessionUpdate === "agent_message_chunk");
    assert.ok(chunks.length > 1, `the answer streams in several chunks, got ${chunks.length}`);
    assert.equal(textOf(a.updates, out.sessionId, "agent_message_chunk"), "Hello from the scripted model.");
    await a.stop();
    return out;
  },

  async tool() {
    const a = startAgent();
    const out = await a.run(async (ctx) => {
      await ctx.request(methods.agent.initialize, initParams);
      const { sessionId } = await ctx.request(methods.agent.session.new, { cwd: process.cwd(), mcpServers: [] });
      const res = await ctx.request(methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: "What time is it?" }] });
      return { sessionId, stopReason: res.stopReason };
    });
    assert.equal(out.stopReason, "end_turn");
    const tu = assertToolTurn(a.updates, out.sessionId, "call_clock", { status: "completed", kind: "read", contentPart: "\"now\"" });
    assert.equal(tu[0].status, "in_progress");
    assert.deepEqual(tu[0].rawInput, { timezone: "UTC" });
    const order = kinds(a.updates, out.sessionId);
    assert.ok(order.indexOf("tool_call") < order.indexOf("tool_call_update"));
    assert.ok(order.lastIndexOf("agent_message_chunk") > order.indexOf("tool_call_update"), "the answer follows the tool");
    assert.equal(textOf(a.updates, out.sessionId, "agent_message_chunk"), "It is noon in UTC.");
    await a.stop();
    return out;
  },

  async permission() {
    const answers = ["reject_once", "allow_always"];
    const a = startAgent({
      requestPermission: ({ params }) => {
        const optionId = answers.shift();
        assert.ok(optionId, `unexpected permission request ${JSON.stringify(params)}`);
        return { outcome: { outcome: "selected", optionId } };
      },
    });
    const out = await a.run(async (ctx) => {
      await ctx.request(methods.agent.initialize, initParams);
      const { sessionId } = await ctx.request(methods.agent.session.new, { cwd: process.cwd(), mcpServers: [] });
      const stops = [];
      for (const text of ["time, rejected", "time, allowed always", "time, remembered"]) {
        const res = await ctx.request(methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text }] });
        stops.push(res.stopReason);
      }
      return { sessionId, stops };
    });
    assert.deepEqual(out.stops, ["end_turn", "end_turn", "end_turn"]);
    assert.equal(a.permissions.length, 2, "allow_always is remembered: the third call is not asked about");
    const req = a.permissions[0];
    assert.equal(req.sessionId, out.sessionId);
    assert.equal(req.toolCall.toolCallId, "p1");
    assert.deepEqual(req.options.map((o) => o.kind), ["allow_once", "allow_always", "reject_once"]);
    assertToolTurn(a.updates, out.sessionId, "p1", { status: "failed", contentPart: "rejected" });
    assertToolTurn(a.updates, out.sessionId, "p2", { status: "completed" });
    assertToolTurn(a.updates, out.sessionId, "p3", { status: "completed" });
    await a.stop();
    return { ...out, permissions: a.permissions.length };
  },

  async cancel() {
    let permissionAborted = false;
    const a = startAgent({
      requestPermission: ({ params, signal, agent }) =>
        new Promise((resolve) => {
          // Leave the question open and cancel the turn instead, as a user
          // pressing stop would; the agent stops waiting and says so.
          const done = () => {
            permissionAborted = true;
            resolve({ outcome: { outcome: "cancelled" } });
          };
          if (signal.aborted) return done();
          signal.addEventListener("abort", done, { once: true });
          agent.notify(methods.agent.session.cancel, { sessionId: params.sessionId });
        }),
    });
    const out = await a.run(async (ctx) => {
      await ctx.request(methods.agent.initialize, initParams);
      const { sessionId } = await ctx.request(methods.agent.session.new, { cwd: process.cwd(), mcpServers: [] });
      // 1: cancel while the answer streams, after its first chunk.
      const first = a.waitFor((n) => n.sessionId === sessionId && n.update.sessionUpdate === "agent_message_chunk");
      const prompt = ctx.request(methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: "Write a long story." }] });
      await first;
      await ctx.notify(methods.agent.session.cancel, { sessionId });
      const streaming = (await prompt).stopReason;
      // 2: cancel while a permission request is pending.
      const pending = (await ctx.request(methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: "time?" }] })).stopReason;
      // 3: the session still works after both.
      const after = (await ctx.request(methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: "still there?" }] })).stopReason;
      return { sessionId, streaming, pending, after };
    });
    assert.equal(out.streaming, "cancelled");
    assert.equal(out.pending, "cancelled");
    assert.equal(out.after, "end_turn");
    assert.ok(permissionAborted, "the pending permission request was cancelled by the agent");
    assert.equal(a.permissions.length, 1);
    const streamed = textOf(a.updates, out.sessionId, "agent_message_chunk");
    assert.ok(streamed.length > 0 && !streamed.includes("THE END"), `the story was cut short: ${JSON.stringify(streamed)}`);
    assertToolTurn(a.updates, out.sessionId, "c1", { status: "failed" });
    await a.stop();
    return out;
  },

  async limit() {
    const a = startAgent();
    const out = await a.run(async (ctx) => {
      await ctx.request(methods.agent.initialize, initParams);
      const { sessionId } = await ctx.request(methods.agent.session.new, { cwd: process.cwd(), mcpServers: [] });
      const res = await ctx.request(methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: "loop" }] });
      return { sessionId, stopReason: res.stopReason };
    });
    assert.equal(out.stopReason, "max_turn_requests");
    assert.match(textOf(a.updates, out.sessionId, "agent_message_chunk"), /iteration limit/);
    await a.stop();
    return out;
  },

  async load() {
    // First process: one tool turn, then exit.
    const a = startAgent();
    const first = await a.run(async (ctx) => {
      await ctx.request(methods.agent.initialize, initParams);
      const { sessionId } = await ctx.request(methods.agent.session.new, { cwd: process.cwd(), mcpServers: [] });
      await ctx.request(methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: "What time is it?" }] });
      return { sessionId };
    });
    const { code } = await a.stop();
    assert.equal(code, 0);
    // Second process: load the session, then continue it.
    const b = startAgent();
    const out = await b.run(async (ctx) => {
      await ctx.request(methods.agent.initialize, initParams);
      await ctx.request(methods.agent.session.load, { sessionId: first.sessionId, cwd: process.cwd(), mcpServers: [] });
      const replayed = b.updates.length;
      const res = await ctx.request(methods.agent.session.prompt, { sessionId: first.sessionId, prompt: [{ type: "text", text: "And now?" }] });
      // Loading a session that does not exist is an error, not an empty one.
      await assert.rejects(
        ctx.request(methods.agent.session.load, { sessionId: "sess_missing", cwd: process.cwd(), mcpServers: [] }),
        (err) => err.code === -32002 && /not found/.test(err.message),
      );
      return { sessionId: first.sessionId, replayed, stopReason: res.stopReason };
    });
    const replay = b.updates.slice(0, out.replayed);
    assert.deepEqual(kinds(replay, out.sessionId), ["user_message_chunk", "tool_call", "tool_call_update", "agent_message_chunk"]);
    assert.equal(textOf(replay, out.sessionId, "user_message_chunk"), "What time is it?");
    assertToolTurn(replay, out.sessionId, "call_clock", { status: "completed", kind: "read", contentPart: "\"now\"" });
    assert.equal(textOf(replay, out.sessionId, "agent_message_chunk"), "It is noon in UTC.");
    assert.equal(out.stopReason, "end_turn");
    await b.stop();
    return out;
  },

  async mcp() {
    const a = startAgent();
    const out = await a.run(async (ctx) => {
      await ctx.request(methods.agent.initialize, initParams);
      const { sessionId } = await ctx.request(methods.agent.session.new, {
        cwd: process.cwd(),
        mcpServers: [{ name: "Everything", command: process.env.MCP_EVERYTHING, args: ["stdio"], env: [] }],
      });
      const res = await ctx.request(methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: "echo hi" }] });
      await ctx.request(methods.agent.session.close, { sessionId });
      // The server left with its session: a new session's turn does not see it.
      const next = await ctx.request(methods.agent.session.new, { cwd: process.cwd(), mcpServers: [] });
      await ctx.request(methods.agent.session.prompt, { sessionId: next.sessionId, prompt: [{ type: "text", text: "and now?" }] });
      return { sessionId, stopReason: res.stopReason };
    });
    assert.equal(out.stopReason, "end_turn");
    assertToolTurn(a.updates, out.sessionId, "call_echo", { status: "completed", contentPart: "Echo: hello from the editor" });
    await a.stop();
    return out;
  },
};

const name = process.argv[2];
const scenario = scenarios[name];
if (!scenario) {
  console.error(`unknown scenario ${name}; one of ${Object.keys(scenarios).join(", ")}`);
  process.exit(2);
}
try {
  const summary = await scenario();
  console.log(JSON.stringify(summary));
} catch (err) {
  console.error(err);
  process.exit(1);
}
