import t from 'tap';
import { createKey, revokeKey } from '../../src/auth/keys.js';
import type { FreshnessMessage, ServerMessage } from '../../src/odds/messages.js';
import { sqlClient } from '../helpers/db.js';
import { http, keyLive, startTestService } from '../helpers/service.js';
import { Client, image } from '../helpers/ws.js';
import { waitFor } from '../helpers/wait.js';
import { Publisher } from '../faults/publisher-socket.js';
import { FakeClock } from '../helpers/clock.js';

/**
 * Only accepted work is a sign of a publisher's life. A `live=1000` publisher that goes on
 * sending, but only batches the service refuses whole, must not keep its markets live: they go
 * stale (`publisher`) once two intervals pass without an accepted batch, and the markets its
 * refused batches' readable odds items name go `unreliable` at once. A revoked key's markets,
 * fed over REST, go stale at once.
 */

/** The service's liveness is judged on a clock the test moves: two intervals pass when the test says, however busy the machine. */
const clock = new FakeClock(Date.now());
const svc = await startTestService(t, { INGEST_MAX_IN_FLIGHT: '1' }, undefined, { clock });
const db = await sqlClient(t, svc.databaseUrl);
const MARKETS = ['1.200001001', '1.200001002', '1.200001003', '1.200001004'];
const eventOf = async (mid: string) => (await db.query<{ eid: number }>('SELECT eid::int FROM markets WHERE mid = $1', [mid])).rows[0].eid;

const stale = (c: Client, mid: string, from: number): FreshnessMessage[] =>
  c.frames.slice(from).filter((f): f is FreshnessMessage => f.op === 'freshness' && f.mid === mid && !f.live);

/** A subscriber holding `mid`, fed by a fresh `live=1000` publisher whose first image was accepted. */
async function fedMarket(mid: string) {
  const pub = await Publisher.open(svc.url, {}, 'live=1000');
  t.teardown(() => pub.close());
  pub.send(1, [image(mid, 2.5)]);
  t.equal((await pub.ack(1)).status, 1, `${mid}: the first image is accepted`);
  const sub = await Client.connect(svc.url);
  t.teardown(() => sub.close());
  t.equal((await sub.request({ op: 'subscribe', mids: [mid] })).status, 1);
  await sub.next((f) => f.op === 'odds' && f.mid === mid);
  return { pub, sub, from: sub.frames.length };
}

/** Sends a message and resolves with the next ack, by order: a refusal of a message whose id cannot be echoed carries id 0. */
async function sendForAck(pub: Publisher, send: () => void) {
  const before = pub.acks.length;
  send();
  await waitFor(() => pub.acks.length > before, 'the ack of a refused message', 10_000, 5);
  return pub.acks[before];
}

/**
 * Sends refused messages, each after the ack of the one before, until the subscriber is told
 * the market is stale for `why`; every one of them must be refused. Returns how many were sent.
 */
async function refuseUntilStale(pub: Publisher, send: (n: number) => void, sub: Client, mid: string, from: number, why: string): Promise<number> {
  let sent = 0;
  const told = () => stale(sub, mid, from).some((f) => f.why === why);
  while (!told()) {
    if (sent > 200) throw new Error(`${mid}: ${sent} refused messages sent and the market was never told ${why}: ${JSON.stringify(sub.frames.slice(from))}`);
    const ack = await sendForAck(pub, () => send(++sent));
    t.equal(ack.status, 0, `${mid}: message ${sent} refused (${ack.message})`);
    clock.advance(100);
    await sub.settled();
  }
  return sent;
}

t.test('batches refused whole keep no market live: not JSON, a bad reference item, a negative id', async (t) => {
  const [notJson, badRef, negativeId] = await Promise.all(MARKETS.slice(0, 3).map(fedMarket));
  const [m0, m1, m2] = MARKETS;
  const eid = await eventOf(m1);
  await Promise.all([
    (async () => {
      const sent = await refuseUntilStale(notJson.pub, () => notJson.pub.ws.send('not json'), notJson.sub, m0, notJson.from, 'publisher');
      t.ok(sent >= 5, `not JSON: stale (publisher) while it sent ${sent} refused messages`);
      t.same(stale(notJson.sub, m0, notJson.from).map((f) => f.why), ['publisher'], 'nothing readable: stale for silence alone');
    })(),
    (async () => {
      const bad = (n: number) => badRef.pub.send(100 + n, [{ kind: 'event', eid, st: 'not a date' }, image(m1, 3)]);
      t.match(await sendForAck(badRef.pub, () => bad(0)), { status: 0, message: /item 0/ });
      await badRef.sub.next((f) => f.op === 'freshness' && f.mid === m1 && !f.live, 5000, badRef.from);
      t.match(stale(badRef.sub, m1, badRef.from)[0], { why: 'unreliable' }, 'a bad reference item: its batch\'s odds market is unreliable at once');
      const sent = await refuseUntilStale(badRef.pub, bad, badRef.sub, m1, badRef.from, 'publisher');
      t.ok(sent >= 5, `then stale (publisher) while it sent ${sent} more`);
    })(),
    (async () => {
      const neg = (n: number) => negativeId.pub.ws.send(JSON.stringify({ id: -n, data: [image(m2, 3)] }));
      const sent = await refuseUntilStale(negativeId.pub, neg, negativeId.sub, m2, negativeId.from, 'publisher');
      t.same(stale(negativeId.sub, m2, negativeId.from).map((f) => f.why), ['unreliable', 'publisher'], `a negative id: unreliable at once, publisher-stale after ${sent} refusals`);
    })(),
  ]);
});

t.test('a publisher refused for its in-flight limit while its one batch waits on a lock is not live', async (t) => {
  const mid = MARKETS[3];
  const { pub, sub, from } = await fedMarket(mid);
  const eid = await eventOf(mid);
  const lock = await sqlClient(t, svc.databaseUrl);
  await lock.query('BEGIN');
  await lock.query('SELECT 1 FROM events WHERE eid = $1 FOR UPDATE', [eid]);
  pub.send(2, [{ kind: 'event', eid, na: 'Renamed while locked' }]);
  // Refused in its place behind batch 2 (acked after it); from the next on, past twice the bound, refused at once.
  pub.send(3, [image(mid, 3)]);
  let id = 3;
  while (!stale(sub, mid, from).length) {
    if (id > 80) throw new Error(`never stale: ${JSON.stringify(sub.frames.slice(from))}`);
    pub.send(++id, [image(mid, 3)]);
    t.match(await pub.ack(id), { status: 0, message: /in flight/ }, `batch ${id} refused for the limit`);
    clock.advance(100);
    await sub.settled();
  }
  t.match(stale(sub, mid, from)[0], { why: 'publisher' }, 'stale while its batches were refused');
  await lock.query('ROLLBACK');
  t.equal((await pub.ack(2)).status, 1, 'the waiting batch goes through once the lock is gone');
  await sub.next((f) => f.op === 'freshness' && f.mid === mid && f.live, 10_000, from);
  t.pass('and the accepted batch makes the market live again');
});

t.test('REST: 400s keep no market live; a revoked key\'s markets are stale at once', async (t) => {
  const keyClock = new FakeClock(Date.now());
  const keyed = await startTestService(t, { AUTH: 'on', REST_RATE_LIMIT: '1000' }, undefined, { clock: keyClock });
  const [pubKey, subKey] = [await createKey(keyed.pool, 'rest-feeder', 'publisher'), await createKey(keyed.pool, 'watcher', 'subscriber')];
  await keyLive(keyed.url, pubKey.token);
  await keyLive(keyed.url, subKey.token);
  const post = (data: unknown[], token = pubKey.token) =>
    http<{ status: number; message: string }>(keyed.url, '/api/v1/ingest', { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': token }, body: JSON.stringify({ data }) });
  const [a, b] = [MARKETS[0], MARKETS[1]];
  t.equal((await post([image(a, 2.5), image(b, 2.5)])).status, 200);
  const sub = await Client.connect(keyed.url, { query: `key=${subKey.token}` });
  t.teardown(() => sub.close());
  t.equal((await sub.request({ op: 'subscribe', mids: [a, b] })).status, 1);
  const from = sub.frames.length;

  // Garbage, one refused POST every 500 ms of the service's clock, for longer than two of a REST key's 5 s intervals: a, held by no accepted POST, goes stale.
  let garbage = 0;
  while (!stale(sub, a, from).some((f) => f.why === 'publisher')) {
    if (garbage > 40) throw new Error(`market ${a} not told stale for its publisher after ${garbage} refused POSTs: ${JSON.stringify(sub.frames.slice(from))}`);
    const r = await post([{ kind: 'market', mid: a, s: 'yes' }, image(a, 3)]);
    t.equal(r.status, 400, 'refused');
    garbage++;
    keyClock.advance(500);
    await sub.settled();
  }
  t.ok(garbage > 20, `stale after ${garbage} refused POSTs, 500 ms apart: past two 5 s intervals, not before`);
  t.match(stale(sub, a, from)[0], { why: 'unreliable' }, 'the refused POST\'s market was unreliable at once');

  // The key feeds again, then is revoked: every market it fed is stale before the revocation returns to its caller's next read.
  t.equal((await post([image(a, 2.6), image(b, 2.6)])).status, 200);
  await sub.next((f) => f.op === 'freshness' && f.mid === a && f.live, 5000, from);
  const beforeRevoke = sub.frames.length;
  await revokeKey(keyed.pool, pubKey.id);
  await waitFor(() => stale(sub, a, beforeRevoke).length > 0 && stale(sub, b, beforeRevoke).length > 0, 'both markets stale after the revocation', 5000);
  const told: ServerMessage[] = [...stale(sub, a, beforeRevoke), ...stale(sub, b, beforeRevoke)];
  t.same(told.map((f) => f.op === 'freshness' && f.why), ['publisher', 'publisher'], 'stale for their publisher, at the revocation, not after its silence');
  t.equal((await post([image(a, 2.7)])).status, 401, 'the revoked key is refused');
});
