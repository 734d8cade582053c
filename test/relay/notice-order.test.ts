import t, { type Test } from 'tap';
import { randomUUID } from 'node:crypto';
import type { ServerMessage } from '../../src/odds/messages.js';
import { startTestService, type TestService } from '../helpers/service.js';
import { NATS_BINARY, NatsServer } from '../helpers/nats.js';
import { Client, image } from '../helpers/ws.js';
import { Publisher } from '../faults/publisher-socket.js';
import { next, startClient, wsUrl } from '../client/helpers.js';

/**
 * A notice and the image it qualifies reach a socket in the right order: a market is told live
 * only with or after the image that makes it live (with conflation, with deltas, across pods on
 * NATS), and told stale before a late image, so no screen shows a price as live that is not.
 */

const M = '1.200001001';
const price = (f: ServerMessage): number | undefined => (f.op === 'odds' ? f.r[0].b[0][0] : f.op === 'delta' ? f.r[0]?.b?.[0]?.[1] : undefined);
const isImageAt = (p: number) => (f: ServerMessage) => (f.op === 'odds' || f.op === 'delta') && f.mid === M && price(f) === p;
const isFreshness = (live: boolean) => (f: ServerMessage) => f.op === 'freshness' && f.mid === M && f.live === live;

/** Subscribers of M taking it as images, as deltas, conflated to a second, and conflated deltas. */
async function subscribers(t: Test, svc: TestService): Promise<[string, Client][]> {
  const ways: [string, Record<string, unknown>][] = [['plain', {}], ['delta', { delta: true }], ['conflated', { conflate: 1000 }], ['conflated delta', { conflate: 1000, delta: true }]];
  const out: [string, Client][] = [];
  for (const [name, how] of ways) {
    const c = await Client.connect(svc.url);
    t.teardown(() => c.close());
    t.equal((await c.request({ op: 'subscribe', mids: [M], ...how })).status, 1, name);
    out.push([name, c]);
  }
  return out;
}

/** A publisher feeds M, goes away (M stale), and another feeds it: each socket gets the new image, then the word that it is live. */
async function liveWithItsImage(t: Test, svc: TestService): Promise<void> {
  const first = await Publisher.open(svc.url);
  first.send(1, [image(M, 2.5)]);
  t.equal((await first.ack(1)).status, 1);
  const subs = await subscribers(t, svc);
  for (const [, c] of subs) await c.next(isImageAt(2.5), 10_000);
  first.close();
  for (const [name, c] of subs) await c.next(isFreshness(false), 10_000).catch(() => t.fail(`${name}: never told stale`));
  const from = subs.map(([, c]) => c.frames.length);
  const second = await Publisher.open(svc.url);
  t.teardown(() => second.close());
  second.send(1, [image(M, 3.5)]);
  t.equal((await second.ack(1)).status, 1);
  for (const [i, [name, c]] of subs.entries()) {
    const live = await c.next(isFreshness(true), 10_000, from[i]);
    const img = c.frames.findIndex((f, k) => k >= from[i] && isImageAt(3.5)(f));
    t.ok(img >= 0 && img < c.frames.indexOf(live), `${name}: the new image (frame ${img}) before the word that the market is live (frame ${c.frames.indexOf(live)})`);
  }
}

t.test('memory bus: live only after the image, however the socket takes the market', async (t) => {
  await liveWithItsImage(t, await startTestService(t));
});

t.test('NATS: live only after the image has come back from the stream', { skip: NATS_BINARY ? false : 'no nats-server' }, async (t) => {
  const nats = await NatsServer.start(t);
  await liveWithItsImage(t, await startTestService(t, { BUS: 'nats', NATS_URL: nats.url, NATS_PREFIX: `t${randomUUID().slice(0, 8)}` }));
});

t.test('a late image: stale before the image on every socket, and the TS client holds it stale when its odds event fires', async (t) => {
  const svc = await startTestService(t);
  const pub = await Publisher.open(svc.url);
  t.teardown(() => pub.close());
  pub.send(1, [image(M, 2.5)]);
  t.equal((await pub.ack(1)).status, 1);
  const subs = await subscribers(t, svc);
  const { client } = startClient(t, { url: wsUrl(svc.url) });
  await client.subscribe({ mids: [M] });
  for (const [, c] of subs) await c.next(isImageAt(2.5), 10_000);
  const from = subs.map(([, c]) => c.frames.length);
  const seen = next(client, 'odds', (msg) => msg.mid === M && msg.r[0].b[0][0] === 4.5);
  pub.send(2, [{ ...image(M, 4.5), late: true }]);
  t.equal((await pub.ack(2)).status, 1);
  await seen;
  t.match(client.freshness(M), { live: false, why: 'late' }, 'the client\'s odds event: the market is already stale');
  for (const [i, [name, c]] of subs.entries()) {
    const img = await c.next(isImageAt(4.5), 10_000, from[i]);
    const stale = c.frames.findIndex((f, k) => k >= from[i] && isFreshness(false)(f));
    t.ok(stale >= 0 && stale < c.frames.indexOf(img), `${name}: told late (frame ${stale}) before the late image (frame ${c.frames.indexOf(img)})`);
  }
  // A subscribe's image of a stale market comes after the word that it is stale, too.
  const fresh = await Client.connect(svc.url);
  t.teardown(() => fresh.close());
  t.equal((await fresh.request({ op: 'subscribe', mids: [M] })).status, 1);
  const img = await fresh.next(isImageAt(4.5));
  const stale = fresh.frames.findIndex(isFreshness(false));
  t.ok(stale >= 0 && stale < fresh.frames.indexOf(img), 'on subscribe: stale, then the image');
});
