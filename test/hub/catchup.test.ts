import t from 'tap';
import { postJson, startTestService } from '../helpers/service.js';
import { Client, image } from '../helpers/ws.js';
import { waitFor } from '../helpers/wait.js';
import { scrape, value } from '../helpers/metrics.js';
import type { MarketStateMessage, ResultMessage, UnsubscribedMessage } from '../../src/odds/messages.js';

/**
 * A socket that stops reading misses frames, but never the truth: once it
 * drains it gets the newest image of every market, and every state change,
 * settlement and detach that happened while it was behind.
 */
const SUSPENDED = '1.200001007';
const DROPPED = '1.200001001';
const RUNNERS = Array.from({ length: 150 }, (_, i) => i + 1);

t.test('a paused socket through a suspension, a settlement and a REST unsubscribe ends with all three', async (t) => {
  // Neither the service's slow close nor uWS's idle timeout (a socket that answers no ping for
  // WS_IDLE_TIMEOUT_S, 32 s, is closed 1006) may end the paused socket: on a loaded machine the
  // pause outlasted 32 s and the socket was gone before it read on.
  const svc = await startTestService(t, { WS_SLOW_BYTES: '65536', WS_MAX_BACKPRESSURE: '134217728', WS_SLOW_CLOSE_MS: '600000', WS_IDLE_TIMEOUT_S: '960' });
  const ingest = (...data: Record<string, unknown>[]) => postJson(svc.url, '/api/v1/ingest', { data });
  const slow = await Client.connect(svc.url);
  t.teardown(() => slow.close());
  await slow.request({ op: 'subscribe', mids: [SUSPENDED, DROPPED] });
  // The WebSocket's own pause: ws resumes a raw socket paused under it whenever its receiver drains
  // what it held, and the socket then read on (the paused socket never fell behind, now and then).
  const raw = slow.ws;
  raw.pause();
  for (let round = 0; round < 40; round++) {
    const r = await ingest(...Array.from({ length: 50 }, (_, i) => image(i % 2 ? SUSPENDED : DROPPED, 2 + ((round * 50 + i) % 90) / 100, RUNNERS)));
    t.equal(r.status, 200);
  }
  // The sweep has seen the socket fall behind before the changes it must not miss. Counted, not
  // sampled: on a loaded machine the sweep could take it behind and, once the kernel's buffers had
  // taken what was on its way, catch it up again between two looks at its state.
  let fell = 0;
  await waitFor(async () => (fell = value(await scrape(svc.url), 'odds_ws_fell_behind_total')) >= 1,
    () => `the paused socket fell behind (odds_ws_fell_behind_total ${fell}, behind now: ${[...svc.hub.subscribers()][0]?.behind})`);
  t.equal((await ingest({ kind: 'market', mid: SUSPENDED, s: false })).status, 200, 'suspended');
  t.equal((await ingest({ kind: 'result', mid: SUSPENDED, res: '101', rt: false, ia: false }, { kind: 'market', mid: SUSPENDED, go: true })).status, 200, 'settled and concluded');
  t.equal((await postJson(svc.url, '/api/v1/unsubscribe', { data: [DROPPED] })).status, 200, 'REST unsubscribe');
  const latest = svc.book.get(DROPPED)!.seq;
  // It resumes once the server has taken both markets from it (the concluded one after its state and
  // settlement, which came first), whether it is still behind or the sweep caught it up meanwhile.
  const socket = [...svc.hub.subscribers()][0];
  const held = () => [...socket.markets()].map(([mid]) => mid);
  await waitFor(() => held().length === 0, () => `both markets taken from the socket (it still holds: ${held().join(', ')})`, 10000);
  t.equal(svc.hub.count('json'), 1, 'the paused socket is still open');
  raw.resume();

  const state = (await slow.next((f) => f.op === 'market' && f.mid === SUSPENDED && !f.s, 20000)) as MarketStateMessage;
  t.match(state, { op: 'market', mid: SUSPENDED, s: false, go: true, rt: false, terms: { bd: 5 } }, 'the current state of the market, suspended and concluded, with its terms');
  const result = (await slow.next((f) => f.op === 'result' && f.mid === SUSPENDED)) as ResultMessage;
  t.same(result, { op: 'result', mid: SUSPENDED, mt: 'winner-market', res: '101', rt: false, ia: false }, 'its settlement');
  const gone = (await slow.next((f) => f.op === 'unsubscribed')) as UnsubscribedMessage;
  t.same([...gone.mids].sort(), [DROPPED, SUSPENDED].sort(), 'and one unsubscribed for both markets it lost meanwhile');
  t.ok(slow.frames.indexOf(result) < slow.frames.indexOf(gone), 'the settlement comes before the detach');
  const dropped = slow.oddsOf(DROPPED);
  t.ok(dropped.length < 1000, `frames were skipped (${dropped.length} of 1000)`);
  t.ok(dropped.at(-1)!.seq <= latest, 'nothing of a market after it was lost');

  // Back on its topics: later frames of markets it still holds would flow; it holds none now.
  await slow.settled();
  const count = slow.frames.length;
  await ingest(image(DROPPED, 3));
  await slow.settled();
  t.equal(slow.frames.filter((f) => f.op === 'odds').length, slow.frames.slice(0, count).filter((f) => f.op === 'odds').length, 'no odds frame of a lost market after catching up');
});
