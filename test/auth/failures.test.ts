import t from 'tap';
import { createKey } from '../../src/auth/keys.js';
import { http, startTestService } from '../helpers/service.js';
import { scrape, value } from '../helpers/metrics.js';
import { eventually } from '../helpers/wait.js';
import { Client } from '../helpers/ws.js';

/**
 * Wrong API keys are throttled per source address. Every request here comes
 * from 127.0.0.1, one source: after the burst even the right key waits, as a
 * guesser must learn nothing while throttled.
 */
// The key is made before the service under test starts, so it is live at once: waiting for it with
// requests would spend the burst, since a key not loaded yet is a wrong key.
const first = await startTestService(t, { AUTH: 'on' });
const { token } = await createKey(first.pool, 'alice', 'subscriber');
await first.close();
const svc = await startTestService(t, { AUTH: 'on', REST_RATE_LIMIT: '1000', AUTH_FAILURE_BURST: '5', AUTH_FAILURES_PER_SECOND: '1' }, first.databaseUrl);
const sports = (key: string) => http<{ status: number; message: string }>(svc.url, '/api/v1/sports', { headers: { 'x-api-key': key } });
const wrong = (i: number) => `ok_${'0'.repeat(12)}_${String(i).padStart(43, 'A')}`;

t.test('a burst of wrong keys from one source: 401 up to the burst, then 429 with Retry-After, the right key included', async (t) => {
  t.equal((await sports(token)).status, 200, 'the key works');
  const answers = [];
  for (let i = 0; i < 5; i++) answers.push((await sports(wrong(i))).status);
  t.same(answers, [401, 401, 401, 401, 401], 'the burst is answered as usual');
  const throttled = await sports(wrong(5));
  t.equal(throttled.status, 429);
  t.same(throttled.body, { status: 0, message: 'too many requests with a wrong API key from this address; retry after 1 s' });
  t.equal(throttled.headers.get('retry-after'), '1');
  t.equal((await sports(token)).status, 429, 'the right key from the same source waits too');
  await t.rejects(Client.connect(svc.url, { query: `key=${token}` }), /upgrade refused: 429/, 'and so does a socket handshake');
  t.ok(value(await scrape(svc.url), 'odds_rate_limited_total', 'scope="wrong_key"') >= 3, 'counted');
  const back = await eventually(() => sports(token), (r) => r.status === 200, 5000, 100);
  t.equal(back.status, 200, 'a throttle, not a ban: the right key works once a token is back');
});
