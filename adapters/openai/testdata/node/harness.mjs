// The suite's two handles: an openai client pointed at `nagent serve`, and
// the scripted model behind it, driven through its /_scripted/ control
// endpoint. TestOpenAINodeClient (adapters/openai/e2e_test.go) sets the
// environment.
import OpenAI from 'openai';

function required(name) {
  const v = process.env[name];
  if (!v) {
    throw new Error(`${name} is not set; run this suite through: go test -run TestOpenAINodeClient ./adapters/openai/`);
  }
  return v;
}

export const baseURL = required('OPENAI_BASE_URL');
export const apiKey = required('OPENAI_API_KEY');
const scriptedURL = required('SCRIPTED_URL');

// MODEL is the configured model; ALIAS is another name for it.
export const MODEL = 'nagent-test';
export const ALIAS = 'gpt-4o-mini';

// newClient builds a client for the server; options override the defaults.
export function newClient(options = {}) {
  return new OpenAI({ baseURL, apiKey, maxRetries: 0, timeout: 30_000, ...options });
}

async function control(method, path, body) {
  const res = await fetch(scriptedURL + path, {
    method,
    headers: { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  if (!res.ok) {
    throw new Error(`scripted model: ${method} ${path} answered ${res.status}: ${text}`);
  }
  return JSON.parse(text);
}

// script replaces the model's queue with replies, in the JSON form of
// scripted.Reply (content, tool_calls, status, …), and returns how many
// requests the model had received, for modelRequests(since).
export async function script(...replies) {
  await control('DELETE', '/_scripted/replies');
  if (replies.length > 0) {
    await control('POST', '/_scripted/replies', replies);
  }
  return (await control('GET', '/_scripted/requests')).length;
}

// modelRequests returns the requests the model received after the first
// `since`: {path, stream, model, messages, tools}.
export async function modelRequests(since = 0) {
  return (await control('GET', '/_scripted/requests')).slice(since);
}

// toolCall is a tool call in OpenAI's shape, for scripting the model.
export function toolCall(id, name, args) {
  return { id, type: 'function', function: { name, arguments: JSON.stringify(args) } };
}
