// The Responses API through the official client: plain, streamed (raw
// events and the client's own accumulator), retrieval, continuation with
// previous_response_id, and a client-side function call round trip.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MODEL, modelRequests, newClient, script, toolCall } from './harness.mjs';

const client = newClient();
const usage = { prompt_tokens: 13, completion_tokens: 5, total_tokens: 18 };

// assistantTexts are the output_text parts of the response's messages.
function assistantTexts(response) {
  return response.output
    .filter((item) => item.type === 'message')
    .flatMap((item) => {
      assert.equal(item.role, 'assistant');
      return item.content.filter((c) => c.type === 'output_text').map((c) => c.text);
    });
}

test('responses.create answers with output_text', async () => {
  const since = await script({ content: 'Hello from the Responses API.', usage });

  const response = await client.responses.create({
    model: MODEL,
    instructions: 'Answer in one sentence.',
    input: 'Say hello.',
  });

  assert.equal(response.object, 'response');
  assert.equal(typeof response.id, 'string');
  assert.ok(response.id.length > 0);
  assert.equal(response.status, 'completed');
  assert.equal(response.model, MODEL);
  assert.equal(response.output_text, 'Hello from the Responses API.');
  assert.deepEqual(assistantTexts(response), ['Hello from the Responses API.']);
  assert.equal(response.usage.input_tokens, usage.prompt_tokens);
  assert.equal(response.usage.output_tokens, usage.completion_tokens);
  assert.equal(response.usage.total_tokens, usage.total_tokens);

  const [req] = await modelRequests(since);
  assert.deepEqual(req.messages.at(-1), { role: 'user', content: 'Say hello.' });
  assert.ok(
    req.messages.some((m) => m.role === 'system' && m.content.includes('Answer in one sentence.')),
    'instructions reach the model as a system message',
  );
});

test('responses.create accepts input as a list of messages', async () => {
  const since = await script({ content: 'Listed.' });

  const response = await client.responses.create({
    model: MODEL,
    input: [{ role: 'user', content: [{ type: 'input_text', text: 'From a list.' }] }],
  });

  assert.equal(response.output_text, 'Listed.');
  const [req] = await modelRequests(since);
  assert.deepEqual(req.messages.at(-1), { role: 'user', content: 'From a list.' });
});

test('responses.create({stream: true}) emits deltas, then response.completed', async () => {
  const text = 'Streamed through the Responses API.';
  await script({ content: text, chunk_size: 4, usage });

  const stream = await client.responses.create({ model: MODEL, input: 'Stream something.', stream: true });
  const events = [];
  for await (const event of stream) events.push(event);

  const types = events.map((e) => e.type);
  assert.equal(types[0], 'response.created');
  assert.equal(types.at(-1), 'response.completed');
  const deltas = events.filter((e) => e.type === 'response.output_text.delta').map((e) => e.delta);
  assert.ok(deltas.length > 1, `expected several deltas, got ${JSON.stringify(types)}`);
  assert.equal(deltas.join(''), text);
  const seq = events.map((e) => e.sequence_number);
  assert.ok(
    seq.every((n, i) => Number.isInteger(n) && (i === 0 || n > seq[i - 1])),
    `sequence_number must increase: ${JSON.stringify(seq)}`,
  );

  const completed = events.at(-1).response;
  assert.equal(completed.status, 'completed');
  assert.equal(completed.id, events[0].response.id);
  assert.deepEqual(assistantTexts(completed), [text]);
  assert.equal(completed.usage.total_tokens, usage.total_tokens);
});

test('responses.stream reassembles the reply with finalResponse()', async () => {
  const text = 'Accumulated by the client.';
  await script({ content: text, chunk_size: 3 });

  const stream = client.responses.stream({ model: MODEL, input: 'Stream it.' });
  const snapshots = [];
  stream.on('response.output_text.delta', (e) => snapshots.push(e.snapshot));
  const response = await stream.finalResponse();

  assert.equal(response.status, 'completed');
  assert.equal(response.output_text, text);
  assert.equal(snapshots.at(-1), text);
});

test('responses.retrieve returns a stored response', async () => {
  await script({ content: 'Keep this.' });
  const created = await client.responses.create({ model: MODEL, input: 'Remember.' });

  const got = await client.responses.retrieve(created.id);

  assert.equal(got.id, created.id);
  assert.equal(got.status, 'completed');
  assert.equal(got.output_text, 'Keep this.');
});

test('previous_response_id continues the conversation', async () => {
  const since = await script({ content: 'Nice to meet you, Ada.' }, { content: 'Your name is Ada.' });

  const first = await client.responses.create({ model: MODEL, input: 'My name is Ada.' });
  const second = await client.responses.create({
    model: MODEL,
    previous_response_id: first.id,
    input: 'What is my name?',
  });

  assert.equal(second.output_text, 'Your name is Ada.');
  assert.notEqual(second.id, first.id);
  if ('previous_response_id' in second) assert.equal(second.previous_response_id, first.id);

  const reqs = await modelRequests(since);
  assert.equal(reqs.length, 2);
  const history = reqs[1].messages.filter((m) => m.role !== 'system').map((m) => [m.role, m.content]);
  assert.deepEqual(history, [
    ['user', 'My name is Ada.'],
    ['assistant', 'Nice to meet you, Ada.'],
    ['user', 'What is my name?'],
  ]);
});

test('a client-side function call round-trips through function_call_output', async () => {
  const since = await script(
    { tool_calls: [toolCall('call_resp_1', 'get_weather', { city: 'Rome' })] },
    { content: 'Rome is warm.' },
  );
  const tools = [
    {
      type: 'function',
      name: 'get_weather',
      description: 'Current weather for a city.',
      parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
      strict: false,
    },
  ];

  const first = await client.responses.create({ model: MODEL, input: 'Weather in Rome?', tools });
  const calls = first.output.filter((item) => item.type === 'function_call');
  assert.equal(calls.length, 1, `want one function_call item, got ${JSON.stringify(first.output)}`);
  const [call] = calls;
  assert.equal(call.call_id, 'call_resp_1');
  assert.equal(call.name, 'get_weather');
  assert.deepEqual(JSON.parse(call.arguments), { city: 'Rome' });

  const second = await client.responses.create({
    model: MODEL,
    previous_response_id: first.id,
    tools,
    input: [{ type: 'function_call_output', call_id: call.call_id, output: 'Warm, 28°C' }],
  });
  assert.equal(second.output_text, 'Rome is warm.');

  const reqs = await modelRequests(since);
  assert.ok(reqs[0].tools.some((t) => t.name === 'get_weather'), 'the function tool is offered to the model');
  const results = reqs[1].messages.filter((m) => m.role === 'tool' && m.tool_call_id === 'call_resp_1');
  assert.equal(results.length, 1);
  assert.equal(results[0].content, 'Warm, 28°C');
});
