// The model list through the official client.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ALIAS, MODEL, modelRequests, newClient, script } from './harness.mjs';

const client = newClient();

test('models.list() pages through the configured model and its aliases', async () => {
  const since = await script();

  const ids = [];
  for await (const model of client.models.list()) {
    assert.equal(model.object, 'model');
    assert.equal(typeof model.owned_by, 'string');
    assert.equal(typeof model.created, 'number');
    ids.push(model.id);
  }

  assert.deepEqual(ids, [MODEL, ALIAS]);
  assert.equal((await modelRequests(since)).length, 0, 'listing models does not call the model');
});

test('models.retrieve() returns one model', async () => {
  await script();
  const model = await client.models.retrieve(ALIAS);
  assert.equal(model.id, ALIAS);
  assert.equal(model.object, 'model');
});
