// Errors reach the client as its typed exceptions, carrying the server's
// message, and requests the server refuses never reach the model.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI, { AuthenticationError, BadRequestError, InternalServerError, NotFoundError } from 'openai';
import { MODEL, modelRequests, newClient, script } from './harness.mjs';

const client = newClient({ maxRetries: 0 });
const hello = [{ role: 'user', content: 'hi' }];

// rejectsWith asserts that promise fails with an instance of type and the
// given status, and returns the error.
async function rejectsWith(promise, type, status) {
  let caught;
  await assert.rejects(promise, (err) => {
    caught = err;
    return true;
  });
  assert.ok(caught instanceof type, `want ${type.name}, got ${caught?.constructor?.name}: ${caught}`);
  assert.ok(caught instanceof OpenAI.APIError);
  assert.equal(caught.status, status);
  assert.equal(typeof caught.error?.message, 'string', 'the error body is OpenAI-shaped');
  assert.equal(caught.message, `${status} ${caught.error.message}`);
  return caught;
}

test('a wrong API key is an AuthenticationError', async () => {
  const since = await script();
  const wrong = newClient({ apiKey: 'sk-wrong', maxRetries: 0 });

  const err = await rejectsWith(wrong.chat.completions.create({ model: MODEL, messages: hello }), AuthenticationError, 401);

  assert.match(err.message, /Incorrect or missing API key/);
  assert.equal(err.code, 'invalid_api_key');
  assert.equal(err.type, 'invalid_request_error');
  assert.equal((await modelRequests(since)).length, 0);
});

test('empty messages are a BadRequestError naming the parameter', async () => {
  const since = await script();

  const err = await rejectsWith(client.chat.completions.create({ model: MODEL, messages: [] }), BadRequestError, 400);

  assert.match(err.message, /messages must be a non-empty array/);
  assert.equal(err.param, 'messages');
  assert.equal(err.type, 'invalid_request_error');
  assert.equal((await modelRequests(since)).length, 0);
});

test('an unknown model is a NotFoundError', async () => {
  const since = await script();

  const err = await rejectsWith(client.chat.completions.create({ model: 'gpt-5-ultra', messages: hello }), NotFoundError, 404);

  assert.match(err.message, /The model "gpt-5-ultra" does not exist/);
  assert.equal(err.code, 'model_not_found');
  assert.equal((await modelRequests(since)).length, 0);
});

test('an unknown model in models.retrieve() is a NotFoundError', async () => {
  await script();
  const err = await rejectsWith(client.models.retrieve('gpt-5-ultra'), NotFoundError, 404);
  assert.match(err.message, /does not exist/);
});

test('a failing model is an InternalServerError carrying its message', async () => {
  const since = await script({ status: 500, error_message: 'upstream melted down' });

  const err = await rejectsWith(client.chat.completions.create({ model: MODEL, messages: hello }), InternalServerError, 502);

  assert.match(err.message, /upstream melted down/);
  assert.equal(err.type, 'server_error');
  assert.equal((await modelRequests(since)).length, 1, 'max_attempts is 1: the model is asked once');
});
