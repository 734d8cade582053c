import t from 'tap';
import { createKey } from '../../src/auth/keys.js';
import { raw, startTestService, type Reply } from '../helpers/service.js';
import { scrape, value } from '../helpers/metrics.js';
import { eventually } from '../helpers/wait.js';
import { Client } from '../helpers/ws.js';

/**
 * No caller is refused for what another at its address did. Wrong API keys
 * are throttled as attempts, per address and per key ID, and only wrong keys
 * are refused: a right key is served during and after a burst of wrong ones
 * from its own address, on REST and /ws. The socket limits count per key.
 *
 * The test talks as a trusted proxy (TRUSTED_PROXIES=127.0.0.1): its
 * X-Forwarded-For names the client, so one loopback connection can be many
 * clients; from 127.0.0.2, a peer that is no proxy, the header is ignored.
 */
// The keys are made before the service under test starts, so they are live at once: waiting for them with
// requests would spend the burst, since a key not loaded yet is a wrong key.
const first = await startTestService(t, { AUTH: 'on' });
const { id: aliceId, token: alice } = await createKey(first.pool, 'alice', 'subscriber');
const { token: bob } = await createKey(first.pool, 'bob', 'subscriber');
const { token: carol } = await createKey(first.pool, 'carol', 'subscriber');
await first.close();
const svc = await startTestService(t, {
  AUTH: 'on', REST_RATE_LIMIT: '1000', AUTH_FAILURE_BURST: '5', AUTH_FAILURES_PER_SECOND: '1', TRUSTED_PROXIES: '127.0.0.1',
  WS_HANDSHAKES_PER_SOURCE: '3', WS_SUBSCRIBES_PER_SOURCE: '3',
}, first.databaseUrl);

type Body = { status: number; message: string };
/** GET /api/v1/sports with `key`, as the client at `client` behind the proxy, or straight from `localAddress`. */
const sports = (key: string, client?: string, localAddress?: string): Promise<Reply<Body>> =>
  raw<Body>(svc.url, '/api/v1/sports', { headers: { 'x-api-key': key, ...(client ? { 'x-forwarded-for': client } : {}) }, localAddress });
let guesses = 0;
/** A wrong key, each under a key ID of its own unless `id` is given. */
const wrong = (id = (++guesses).toString(16).padStart(12, '0')) => `ok_${id}_${String(++guesses).padStart(43, 'A')}`;
const statuses = (rs: Reply[]) => rs.map((r) => r.status);

t.test('a burst of wrong keys from one address: 401, then 429 with Retry-After; its right key is served during and after, on REST and /ws', async (t) => {
  const A = '203.0.113.1';
  // The burst and the right key's requests interleaved, all in flight at once.
  const mixed = await Promise.all(Array.from({ length: 16 }, (_, i) => (i % 2 ? sports(alice, A) : sports(wrong(), A))));
  const right = mixed.filter((_, i) => i % 2);
  const wrongs = mixed.filter((_, i) => i % 2 === 0);
  t.same(statuses(right), Array(8).fill(200), 'the right key, during the burst');
  t.same(statuses(wrongs).filter((s) => s === 401).length, 5, 'the burst is answered as usual');
  t.same(statuses(wrongs).filter((s) => s === 429).length, 3, 'past it, wrong keys are throttled');
  const throttled = await sports(wrong(), A);
  t.equal(throttled.status, 429);
  t.same(throttled.body, { status: 0, message: 'too many requests with a wrong API key from this address; retry after 1 s' });
  t.equal(throttled.headers.get('retry-after'), '1');
  t.equal((await sports(alice, A)).status, 200, 'the right key, right after it');
  t.equal((await sports(bob, A)).status, 200, 'and another client\'s key at the same address');
  const ws = await Client.connect(svc.url, { query: `key=${alice}`, headers: { 'x-forwarded-for': A } });
  t.teardown(() => ws.close());
  t.equal((await ws.request({ op: 'subscribe', mids: ['1.200001001'] })).status, 1, 'a /ws socket with the right key opens and is served');
  await t.rejects(Client.connect(svc.url, { query: `key=${wrong()}`, headers: { 'x-forwarded-for': A } }), /upgrade refused: 429/, 'a wrong key\'s handshake is throttled too');
  t.ok(value(await scrape(svc.url), 'odds_rate_limited_total', 'scope="wrong_key"') >= 5, 'counted');
  t.equal((await sports(wrong(), '203.0.113.2')).status, 401, 'another client behind the same proxy is its own address');
  const back = await eventually(() => sports(wrong(), A), (r) => r.status === 401, 5000, 100);
  t.equal(back.status, 401, 'a throttle, not a ban: a token comes back');
});

t.test('wrong secrets for one key ID are throttled from any address; the key itself still works', async (t) => {
  const guesses = await Promise.all(Array.from({ length: 5 }, (_, i) => sports(wrong(aliceId), `198.51.100.${i + 1}`)));
  t.same(statuses(guesses), [401, 401, 401, 401, 401]);
  const sixth = await sports(wrong(aliceId), '198.51.100.99');
  t.same([sixth.status, sixth.body], [429, { status: 0, message: 'too many requests with a wrong API key for this key ID; retry after 1 s' }], 'from an address never seen');
  t.equal((await sports(alice, '198.51.100.99')).status, 200, 'the key with its right secret is served');
  t.equal((await sports(wrong(), '198.51.100.99')).status, 401, 'the address itself is not throttled');
  await t.resolves(Client.connect(svc.url, { query: `key=${alice}` }).then((c) => c.close()), 'its sockets open');
});

t.test('X-Forwarded-For is taken only from a trusted proxy', async (t) => {
  // From 127.0.0.2, which is no proxy: each request names another client, yet all count against 127.0.0.2.
  const direct = [];
  for (let i = 0; i < 6; i++) direct.push(await sports(wrong(), `203.0.113.${50 + i}`, '127.0.0.2'));
  t.same(statuses(direct), [401, 401, 401, 401, 401, 429], 'the header is ignored: one address');
  t.equal((await sports(wrong(), '203.0.113.55')).status, 401, 'through the proxy, the client it named was never charged');
  t.equal((await sports(alice, undefined, '127.0.0.2')).status, 200, 'and 127.0.0.2\'s right key is served');
});

t.test('socket admission counts per key: one key\'s handshake and subscribe floods hold back no other key at its address', async (t) => {
  const opened: Client[] = [];
  t.teardown(() => opened.forEach((c) => c.close()));
  const open = (key: string) => Client.connect(svc.url, { query: `key=${key}` }).then((c) => (opened.push(c), c));
  // Eight at once against three a second per key: some are refused, however slow the machine.
  const flood = await Promise.allSettled(Array.from({ length: 8 }, () => open(carol)));
  const refused = flood.filter((r) => r.status === 'rejected');
  t.ok(refused.length > 0 && refused.length < 8, `carol past her rate: ${refused.length} of 8 refused`);
  t.match((refused[0] as PromiseRejectedResult).reason, /upgrade refused: 429/);
  const b = await open(bob);
  t.equal((await b.request({ op: 'ping' })).status, 1, 'bob, at the same address, opens at once');
  const c = opened[0]!;
  const acks = await Promise.all(Array.from({ length: 8 }, (_, i) => c.request({ op: 'subscribe', mids: [`1.20000100${i + 1}`] })));
  const busy = acks.filter((x) => x.status === 0 && x.message.startsWith('subscribe rate limit'));
  t.ok(busy.length > 0, `carol's subscribes past three a second are refused: ${busy.length} of 8`);
  t.match(busy[0]!.message, /^subscribe rate limit: at most 3 subscribe requests per second per API key; nothing changed/);
  t.equal((await b.request({ op: 'subscribe', mids: ['1.200001001'] })).status, 1, 'bob\'s is served');
});
