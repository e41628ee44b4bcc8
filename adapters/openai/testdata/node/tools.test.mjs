// Tool turns through the official client: a server-side tool the client
// never sees, and client-side tools that round-trip through the client,
// bound to a session by X-Session-Id or stateless with the full history.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MODEL, modelRequests, newClient, script, toolCall } from './harness.mjs';

const client = newClient();

const weatherTool = {
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'Current weather for a city.',
    parameters: {
      type: 'object',
      properties: { city: { type: 'string' } },
      required: ['city'],
    },
  },
};

// toolResults are the model request's tool results for call id.
function toolResults(req, id) {
  return req.messages.filter((m) => m.role === 'tool' && m.tool_call_id === id);
}

// callsOf are the tool calls of the request's assistant messages.
function callsOf(req) {
  return req.messages.filter((m) => m.role === 'assistant').flatMap((m) => m.tool_calls ?? []);
}

test('a server-side tool runs inside the turn; the client sees only the answer', async () => {
  const since = await script(
    { tool_calls: [toolCall('call_time_1', 'get_current_time', {})] },
    { content: 'It is noon somewhere.' },
  );

  const completion = await client.chat.completions.create({
    model: MODEL,
    messages: [{ role: 'user', content: 'What time is it?' }],
  });

  const [choice] = completion.choices;
  assert.equal(choice.message.content, 'It is noon somewhere.');
  assert.equal(choice.finish_reason, 'stop');
  assert.equal(choice.message.tool_calls, undefined, 'the server-side call stays on the server');

  const reqs = await modelRequests(since);
  assert.equal(reqs.length, 2, 'one model call for the tool call, one for the answer');
  assert.ok(reqs[0].tools.some((t) => t.name === 'get_current_time'), 'the model is offered get_current_time');
  assert.deepEqual(callsOf(reqs[1]), [toolCall('call_time_1', 'get_current_time', {})]);
  const results = toolResults(reqs[1], 'call_time_1');
  assert.equal(results.length, 1, 'the second model request carries the tool result');
  assert.ok(results[0].content.length > 0, 'the tool result is not empty');
});

test('a server-side tool turn streams only the answer to finalChatCompletion()', async () => {
  const since = await script(
    { tool_calls: [toolCall('call_time_2', 'get_current_time', {})] },
    { content: 'Streamed after the tool.', chunk_size: 5 },
  );

  const completion = await client.chat.completions
    .stream({ model: MODEL, messages: [{ role: 'user', content: 'Time, streamed?' }] })
    .finalChatCompletion();

  assert.equal(completion.choices[0].message.content, 'Streamed after the tool.');
  assert.equal(completion.choices[0].finish_reason, 'stop');
  assert.ok(!completion.choices[0].message.tool_calls?.length, 'no tool call reaches the client');
  const reqs = await modelRequests(since);
  assert.equal(toolResults(reqs[1], 'call_time_2').length, 1);
});

test('a client-side tool round-trips within a session bound by X-Session-Id', async () => {
  const since = await script(
    { tool_calls: [toolCall('call_weather_1', 'get_weather', { city: 'Paris' })] },
    { content: 'It is sunny in Paris.' },
  );
  const question = { role: 'user', content: 'Weather in Paris?' };

  const first = await client.chat.completions
    .create({ model: MODEL, messages: [question], tools: [weatherTool] })
    .withResponse();
  const sessionID = first.response.headers.get('x-session-id');
  assert.ok(sessionID, 'the response names its session in X-Session-Id');
  const [choice] = first.data.choices;
  assert.equal(choice.finish_reason, 'tool_calls');
  assert.equal(choice.message.content, null);
  assert.deepEqual(choice.message.tool_calls, [toolCall('call_weather_1', 'get_weather', { city: 'Paris' })]);

  const call = choice.message.tool_calls[0];
  const args = JSON.parse(call.function.arguments);
  const second = await client.chat.completions
    .create(
      {
        model: MODEL,
        tools: [weatherTool],
        messages: [
          question,
          choice.message,
          { role: 'tool', tool_call_id: call.id, content: `Sunny, 24°C in ${args.city}` },
        ],
      },
      { headers: { 'X-Session-Id': sessionID } },
    )
    .withResponse();

  assert.equal(second.response.headers.get('x-session-id'), sessionID);
  assert.equal(second.data.choices[0].message.content, 'It is sunny in Paris.');
  assert.equal(second.data.choices[0].finish_reason, 'stop');

  const reqs = await modelRequests(since);
  assert.equal(reqs.length, 2);
  assert.ok(reqs[0].tools.some((t) => t.name === 'get_weather'), 'the client tool is offered to the model');
  const questions = reqs[1].messages.filter((m) => m.role === 'user' && m.content === question.content);
  assert.equal(questions.length, 1, 'the session holds the question once, not twice');
  assert.deepEqual(callsOf(reqs[1]), [call]);
  const results = toolResults(reqs[1], 'call_weather_1');
  assert.equal(results.length, 1);
  assert.equal(results[0].content, 'Sunny, 24°C in Paris');
});

test('a client-side tool round-trips statelessly with the full history', async () => {
  const since = await script(
    { tool_calls: [toolCall('call_weather_2', 'get_weather', { city: 'Oslo' })] },
    { content: 'Oslo is snowy.' },
  );
  const question = { role: 'user', content: 'Weather in Oslo?' };

  const first = await client.chat.completions.create({ model: MODEL, messages: [question], tools: [weatherTool] });
  const [choice] = first.choices;
  assert.equal(choice.finish_reason, 'tool_calls');
  assert.equal(choice.message.tool_calls.length, 1);
  const call = choice.message.tool_calls[0];
  assert.equal(call.function.name, 'get_weather');

  const second = await client.chat.completions.create({
    model: MODEL,
    tools: [weatherTool],
    messages: [question, choice.message, { role: 'tool', tool_call_id: call.id, content: 'Snow, -3°C' }],
  });
  assert.equal(second.choices[0].message.content, 'Oslo is snowy.');

  const reqs = await modelRequests(since);
  assert.equal(reqs.length, 2);
  const history = reqs[1].messages.filter((m) => m.role !== 'system');
  assert.deepEqual(
    history.map((m) => m.role),
    ['user', 'assistant', 'tool'],
    'the stateless request is the whole history, each message once',
  );
  assert.deepEqual(callsOf(reqs[1]), [call]);
  assert.equal(toolResults(reqs[1], call.id)[0].content, 'Snow, -3°C');
});

test('a streamed client-side tool call reassembles in finalChatCompletion()', async () => {
  await script({ tool_calls: [toolCall('call_weather_3', 'get_weather', { city: 'Lima' })], chunk_size: 2 });

  const completion = await client.chat.completions
    .stream({ model: MODEL, messages: [{ role: 'user', content: 'Weather in Lima?' }], tools: [weatherTool] })
    .finalChatCompletion();

  const [choice] = completion.choices;
  assert.equal(choice.finish_reason, 'tool_calls');
  assert.equal(choice.message.tool_calls.length, 1);
  const [call] = choice.message.tool_calls;
  assert.equal(call.id, 'call_weather_3');
  assert.equal(call.type, 'function');
  assert.equal(call.function.name, 'get_weather');
  assert.deepEqual(JSON.parse(call.function.arguments), { city: 'Lima' });
});
