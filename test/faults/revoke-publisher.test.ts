import t from 'tap';
import { createKey, revokeKey } from '../../src/auth/keys.js';
import { CLOSE } from '../../src/errors.js';
import { sqlClient } from '../helpers/db.js';
import { http, startTestService } from '../helpers/service.js';
import { Client, image } from '../helpers/ws.js';
import { Publisher } from './publisher-socket.js';
import { captureErrorLogs, eventually } from './lib.js';

/**
 * A publisher key revoked while its batches are queued on one /ingest socket
 * must move no price after this pod hears of it, and no batch with reference
 * items may commit after the revocation has (whether or not the pod heard).
 */
const errorLogs = captureErrorLogs(t);
const svc = await startTestService(t, { AUTH: 'on', REST_RATE_LIMIT: '1000' });
const db = await sqlClient(t, svc.databaseUrl);
const M = '1.200001003';
const EID = (await db.query<{ eid: number }>('SELECT eid::int FROM markets WHERE mid = $1', [M])).rows[0].eid;
const eventName = async () => (await db.query<{ na: string }>('SELECT na FROM events WHERE eid = $1', [EID])).rows[0].na;

/** A key made through the pool is live on this pod once its NOTIFY is applied (401 until then). */
async function liveKey(client: string, role: 'publisher' | 'subscriber'): Promise<{ id: string; token: string }> {
  const key = await createKey(svc.pool, client, role);
  await eventually(() => http(svc.url, '/api/v1/sports', { headers: { 'x-api-key': key.token } }), (r) => r.status !== 401);
  return key;
}
const ingest = (token: string, data: unknown[]) =>
  http<{ status: number; message: string }>(svc.url, '/api/v1/ingest', { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': token }, body: JSON.stringify({ data }) });

/** Batch i moves M's best back price to 2 + i; even batches also rename the event, so they write in a transaction. */
const BATCHES = 120;
const batch = (i: number) => (i % 2 ? [image(M, 2 + i)] : [{ kind: 'event', eid: EID, na: `Revoked ${i}` }, image(M, 2 + i)]);
const batchOf = (f: { r: { b: number[][] }[] }) => f.r[0].b[0][0] - 2;

t.test('revoked in the middle of 120 pipelined batches: later ones are refused, nothing they carry is published or written', async (t) => {
  const [feeder, other, watcher] = [await liveKey('feeder', 'publisher'), await liveKey('other', 'publisher'), await liveKey('watcher', 'subscriber')];
  const sub = await Client.connect(svc.url, { query: `key=${watcher.token}` });
  t.teardown(() => sub.close());
  t.equal((await sub.request({ op: 'subscribe', mids: [M] })).status, 1);
  const pub = await Publisher.open(svc.url, { 'x-api-key': feeder.token });
  for (let i = 1; i <= BATCHES; i++) pub.send(i, batch(i));
  await pub.ack(10);
  await revokeKey(svc.pool, feeder.id);

  // Every batch is answered before the close: applied ones first, then the refusals, in order.
  t.same(await pub.closed, CLOSE.REVOKED);
  t.same(pub.acks.map((a) => a.id), Array.from({ length: BATCHES }, (_, i) => i + 1), 'all 120 acked, in order');
  const applied = pub.acks.findIndex((a) => a.status === 0);
  t.ok(applied >= 10 && applied < BATCHES, `${applied} applied before the revocation took effect`);
  const refused = pub.acks.slice(applied);
  t.ok(refused.every((a) => a.status === 0 && /^key revoked: /.test(a.message)), 'every later batch refused as revoked');
  // A batch already in its transaction when the pod heard may have committed its event; its odds are held back all the same.
  const wroteEvent = refused.filter((a) => /reference items were written/.test(a.message)).map((a) => a.id);
  t.ok(wroteEvent.length <= 1, 'at most the batch running at that moment wrote anything');

  // A price from another publisher, after everything: once it arrives, anything sent before it has arrived too.
  const fresh = await Client.connect(svc.url, { query: `key=${watcher.token}` });
  t.teardown(() => fresh.close());
  t.equal((await fresh.request({ op: 'subscribe', mids: [M] })).status, 1);
  const current = await fresh.next((f) => f.op === 'odds' && f.mid === M);
  t.equal(batchOf(current as never), applied, 'the book holds the last applied batch');
  // Above every batch's price and within the decimal odds a runner market may have.
  const MARKER = 500;
  t.equal((await ingest(other.token, [image(M, MARKER)])).status, 200);
  await sub.next((f) => f.op === 'odds' && f.mid === M && f.r[0].b[0][0] === MARKER);
  const seen = sub.oddsOf(M).map(batchOf).filter((i) => i < MARKER - 2);
  t.equal(Math.max(...seen), applied, 'the subscriber\'s last price before the marker is from the last applied batch');
  t.ok(seen.every((i) => i <= applied), 'no price from a refused batch was ever published');
  const lastWriter = Math.max(...[...Array.from({ length: applied }, (_, i) => i + 1), ...wroteEvent].filter((i) => i % 2 === 0));
  t.equal(await eventName(), `Revoked ${lastWriter}`, 'the event holds the name of the last batch that committed');
});

t.test('committed but not yet heard here: a batch with reference items is refused in its transaction, and the pod learns from it', async (t) => {
  const key = await liveKey('quiet', 'publisher');
  const before = await eventName();
  // The trigger is off for the revoking UPDATE only: the revocation commits and no pod is told.
  await db.query('BEGIN');
  await db.query('ALTER TABLE api_keys DISABLE TRIGGER api_keys_notify');
  await db.query('UPDATE api_keys SET revoked_at = now() WHERE id = $1', [key.id]);
  await db.query('ALTER TABLE api_keys ENABLE TRIGGER api_keys_notify');
  await db.query('COMMIT');

  // The documented window: odds-only batches are checked against this pod's memory, which has not heard.
  t.equal((await ingest(key.token, [image(M, 500)])).status, 200, 'odds-only is still accepted: the pod has not heard');
  const r = await ingest(key.token, [{ kind: 'event', eid: EID, na: 'After the revocation' }, image(M, 501)]);
  t.same([r.status, r.body], [401, { status: 0, message: 'key revoked: this batch was not applied' }], 'refused inside its transaction');
  t.equal(await eventName(), before, 'nothing was written');
  const after = await ingest(key.token, [image(M, 502)]);
  t.same([after.status, after.body], [401, { status: 0, message: 'the API key is not valid or was revoked' }], 'the pod dropped the key at once, without a NOTIFY');
});

t.test('nothing was logged as an error', async (t) => {
  t.same(errorLogs, []);
});
