// Chat completions through the official client: plain, streamed and
// reassembled by the client's own helpers, and a model failure mid-stream.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { APIError } from 'openai';
import { ALIAS, MODEL, modelRequests, newClient, script } from './harness.mjs';

const client = newClient();
const usage = { prompt_tokens: 11, completion_tokens: 7, total_tokens: 18 };

test('chat.completions.create answers with the model reply', async () => {
  const since = await script({ content: 'Hello from the scripted model.', usage });

  const completion = await client.chat.completions.create({
    model: MODEL,
    messages: [
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'Say hello.' },
    ],
  });

  assert.match(completion.id, /^chatcmpl-/);
  assert.equal(completion.object, 'chat.completion');
  assert.equal(completion.model, MODEL);
  assert.equal(typeof completion.created, 'number');
  assert.equal(completion.choices.length, 1);
  const [choice] = completion.choices;
  assert.equal(choice.index, 0);
  assert.equal(choice.finish_reason, 'stop');
  assert.equal(choice.message.role, 'assistant');
  assert.equal(choice.message.content, 'Hello from the scripted model.');
  assert.equal(choice.message.tool_calls, undefined);
  assert.deepEqual(
    { prompt_tokens: completion.usage.prompt_tokens, completion_tokens: completion.usage.completion_tokens, total_tokens: completion.usage.total_tokens },
    usage,
  );

  const [req] = await modelRequests(since);
  assert.equal(req.model, MODEL);
  assert.equal(req.stream, false);
  assert.deepEqual(req.messages.at(-1), { role: 'user', content: 'Say hello.' });
});

test('a model alias is answered under the name the client asked for', async () => {
  const since = await script({ content: 'aliased' });

  const completion = await client.chat.completions.create({
    model: ALIAS,
    messages: [{ role: 'user', content: 'hi' }],
  });

  assert.equal(completion.model, ALIAS);
  assert.equal(completion.choices[0].message.content, 'aliased');
  const [req] = await modelRequests(since);
  assert.equal(req.model, MODEL, 'the alias reaches the provider as the configured model');
});

test('chat.completions.stream reassembles the reply with finalChatCompletion()', async () => {
  const text = 'Streaming works, one small chunk at a time.';
  await script({ content: text, chunk_size: 4, usage });

  const stream = client.chat.completions.stream({
    model: MODEL,
    messages: [{ role: 'user', content: 'Stream something.' }],
    stream_options: { include_usage: true },
  });
  const deltas = [];
  stream.on('content', (delta) => deltas.push(delta));
  const completion = await stream.finalChatCompletion();

  assert.ok(deltas.length > 1, `expected several content deltas, got ${JSON.stringify(deltas)}`);
  assert.equal(deltas.join(''), text);
  assert.equal(completion.choices[0].message.role, 'assistant');
  assert.equal(completion.choices[0].message.content, text);
  assert.equal(completion.choices[0].finish_reason, 'stop');
  assert.equal(completion.usage.total_tokens, usage.total_tokens);
  assert.equal(await stream.finalContent(), text);
});

test('create({stream: true}) yields chunks, then a final usage chunk', async () => {
  const text = 'Chunk by chunk.';
  const since = await script({ content: text, chunk_size: 3, usage });

  const stream = await client.chat.completions.create({
    model: MODEL,
    messages: [{ role: 'user', content: 'Stream it.' }],
    stream: true,
    stream_options: { include_usage: true },
  });
  const chunks = [];
  for await (const chunk of stream) chunks.push(chunk);

  assert.ok(chunks.length >= 4, `expected several chunks, got ${chunks.length}`);
  const ids = new Set(chunks.map((c) => c.id));
  assert.equal(ids.size, 1, 'every chunk carries the same id');
  for (const c of chunks) {
    assert.equal(c.object, 'chat.completion.chunk');
    assert.equal(c.model, MODEL);
  }
  assert.equal(chunks[0].choices[0].delta.role, 'assistant');

  const content = chunks.flatMap((c) => c.choices.map((ch) => ch.delta.content ?? '')).join('');
  assert.equal(content, text);
  const finishes = chunks.flatMap((c) => c.choices.filter((ch) => ch.finish_reason).map((ch) => ch.finish_reason));
  assert.deepEqual(finishes, ['stop']);

  const last = chunks.at(-1);
  assert.deepEqual(last.choices, [], 'the usage chunk has no choices');
  assert.equal(last.usage.prompt_tokens, usage.prompt_tokens);
  assert.equal(last.usage.completion_tokens, usage.completion_tokens);
  assert.equal(last.usage.total_tokens, usage.total_tokens);
  for (const c of chunks.slice(0, -1)) {
    assert.ok(c.usage == null, `only the last chunk carries usage, got ${JSON.stringify(c)}`);
  }

  const [req] = await modelRequests(since);
  assert.equal(req.stream, true, 'the server streams from the model too');
});

test('without include_usage a stream has no usage chunk', async () => {
  await script({ content: 'no usage' });

  const stream = await client.chat.completions.create({
    model: MODEL,
    messages: [{ role: 'user', content: 'hi' }],
    stream: true,
  });
  const chunks = [];
  for await (const chunk of stream) chunks.push(chunk);

  assert.ok(chunks.every((c) => c.usage == null && c.choices.length === 1));
  assert.equal(chunks.map((c) => c.choices[0].delta.content ?? '').join(''), 'no usage');
});

test('a model failure during a stream surfaces as an APIError from the iterator', async () => {
  await script({ status: 500, error_message: 'upstream melted down' });

  const stream = await client.chat.completions.create({
    model: MODEL,
    messages: [{ role: 'user', content: 'hi' }],
    stream: true,
  });
  await assert.rejects(
    async () => {
      for await (const _ of stream);
    },
    (err) => {
      assert.ok(err instanceof APIError, `want APIError, got ${err?.constructor?.name}: ${err}`);
      assert.match(err.message, /upstream melted down/);
      return true;
    },
  );
});
