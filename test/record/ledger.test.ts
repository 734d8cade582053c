/**
 * What a socket was sent, from its ledger: a socket that stops reading falls behind, is told its
 * market is `behind`, skips images, is sent the newest once it reads again and is told `live`;
 * one with conflation gets one image per interval; one reads everything. Once they close, each
 * socket's ledger (spans of seqs per market, what was skipped, when it was told `behind`) says
 * exactly which images and notices it received, and the screen route says what it held and
 * whether it was told it was live.
 */
import t from 'tap';
import { http, postJson, startTestService } from '../helpers/service.js';
import { Client, image } from '../helpers/ws.js';
import { waitFor } from '../helpers/wait.js';
import { loadChecker } from '../docs/schema.js';
import type { FreshnessMessage } from '../../src/odds/messages.js';

type Obj = Record<string, unknown>;
interface Span { epoch: string; from: number | null; sent: boolean; to: number | null; conflate: number; seqs?: number[] }
interface Behind { since: number; start: number; end: number | null }
interface Ledger { conn: string; format: string; closed: { at: number; code: number } | null; events: { op: string; body: Obj }[]; markets: Record<string, { spans: Span[]; skipped: { from: number; to: number }[]; behind: Behind[] }> }
interface Screen { markets: { mid: string; behind: number | null; odds: { seq: number }; freshness: { at: number; frame: Obj } | null }[] }

const M = '1.200001007';
const RUNNERS = Array.from({ length: 150 }, (_, i) => i + 1);
// Small enough that a paused socket falls behind within a few rounds, never closed meanwhile.
const svc = await startTestService(t, { RECORD: 'on', WS_SLOW_BYTES: '1048576', WS_MAX_BACKPRESSURE: '268435456', WS_SLOW_CLOSE_MS: '3600000', WS_IDLE_TIMEOUT_S: '960' });
const started = Date.now();
const api = await loadChecker();

/** Every seq each span sent: all of them unconflated (`from` only when it was sent it as it joined), those listed conflated. */
const sentBy = (spans: Span[]): number[] => spans.flatMap((s) => {
  if (s.seqs) return s.seqs;
  const first = s.sent ? s.from! : s.from! + 1;
  return Array.from({ length: s.to! - first + 1 }, (_, i) => first + i);
});

t.test('the ledger\'s spans and skips match what each socket received', async (t) => {
  const slow = await Client.connect(svc.url);
  const fast = await Client.connect(svc.url, { format: 'proto' });
  const thin = await Client.connect(svc.url);
  await slow.request({ op: 'subscribe', mids: [M] });
  await fast.request({ op: 'subscribe', mids: [M] });
  await thin.request({ op: 'subscribe', mids: [M], conflate: 100 });
  const raw = slow.ws;
  raw.pause();
  let round = 0;
  const publish = async () => {
    const batch = Array.from({ length: 50 }, (_, i) => image(M, 2 + ((round * 50 + i) % 90) / 100, RUNNERS));
    round++;
    t.equal((await postJson(svc.url, '/api/v1/ingest', { data: batch })).status, 200);
    const seq = svc.book.get(M)!.seq;
    await fast.next((f) => f.op === 'odds' && f.mid === M && f.seq === seq, 20_000);
  };
  const listed = async () => (await http<Obj[]>(svc.url, `/api/v1/record/sockets?from=${started}`)).body;
  const toldBehind = async () => {
    for (const c of await listed()) if ((await http<Ledger>(svc.url, `/api/v1/record/socket?conn=${c.conn}`)).body.events.some((e) => e.op === 'behind')) return true;
    return false;
  };
  // On until it is told its market is behind: owed past a quarter of WS_MAX_AGE_MS, with newer images.
  while (!(await toldBehind())) {
    if (round > 400) throw new Error('the paused socket was never told it is behind');
    await publish();
  }
  await publish();
  const whileBehind = Date.now();
  raw.resume();
  const latest = svc.book.get(M)!.seq;
  await slow.next((f) => f.op === 'odds' && f.seq === latest, 30_000);
  await thin.next((f) => f.op === 'odds' && f.seq === latest, 30_000);
  await slow.next((f) => f.op === 'freshness' && f.mid === M && f.live, 10_000);
  for (const c of [slow, fast, thin]) await c.settled();
  for (const c of [slow, fast, thin]) c.close();
  await Promise.all([slow.closed, fast.closed, thin.closed]);

  await waitFor(async () => (await listed()).length === 3, 'three sockets in the record');
  const ledgers: Ledger[] = [];
  for (const c of await listed()) ledgers.push((await http<Ledger>(svc.url, `/api/v1/record/socket?conn=${c.conn}`)).body);
  await waitFor(async () => {
    ledgers.length = 0;
    for (const c of await listed()) ledgers.push((await http<Ledger>(svc.url, `/api/v1/record/socket?conn=${c.conn}`)).body);
    return ledgers.every((l) => l.closed !== null);
  }, 'the three sockets closed in the record');
  api.check(t, 'GET', '/api/v1/record/sockets', await http(svc.url, `/api/v1/record/sockets?from=${started}`));
  api.check(t, 'GET', '/api/v1/record/socket', await http(svc.url, `/api/v1/record/socket?conn=${ledgers[0].conn}`));
  const unknown = await http(svc.url, `/api/v1/record/socket?conn=${ledgers[0].conn}999`);
  t.equal(unknown.status, 404, 'an unknown socket');
  api.check(t, 'GET', '/api/v1/record/socket', unknown);
  const isThin = (l: Ledger) => l.markets[M].spans.some((s) => s.conflate > 0);
  const byName = {
    fast: ledgers.find((l) => l.format === 'proto')!,
    thin: ledgers.find((l) => l.format === 'json' && isThin(l))!,
    slow: ledgers.find((l) => l.format === 'json' && !isThin(l))!,
  };
  const received = (c: Client) => c.oddsOf(M).map((f) => f.seq);

  t.same(sentBy(byName.fast.markets[M].spans), received(fast), 'the reading socket: one span, every seq');
  t.same(byName.fast.markets[M].skipped, [], 'nothing skipped for it');

  const slowSeqs = received(slow);
  t.same(sentBy(byName.slow.markets[M].spans), slowSeqs, 'the slow socket: its spans are exactly the seqs it received');
  const gaps = slowSeqs.slice(1).flatMap((s, i) => (s > slowSeqs[i] + 1 ? [{ from: slowSeqs[i] + 1, to: s - 1 }] : []));
  t.ok(gaps.length >= 1, `it skipped ${gaps.length} stretches`);
  t.same(byName.slow.markets[M].skipped.map(({ from, to }) => ({ from, to })), gaps, 'its skips are exactly the seqs it did not receive');

  t.same(sentBy(byName.thin.markets[M].spans), received(thin), 'the conflated socket: the seqs its variant sent it, exactly');
  t.ok(received(thin).length < latest, 'conflation thinned what it got');
  t.same(byName.slow.closed, { at: byName.slow.closed!.at, code: 1005 }, 'how it ended');

  const notices = slow.frames.filter((f): f is FreshnessMessage => f.op === 'freshness' && f.mid === M);
  t.match(notices, [{ live: false, why: 'behind' }, { live: true }], 'the slow socket was told behind, then live');
  const told = byName.slow.markets[M].behind;
  t.equal(told.length, 1, 'one stretch told behind in its ledger');
  t.equal(told[0].since, notices[0].at, 'owed since when its notice said');
  t.ok(told[0].end !== null && told[0].end >= told[0].start, 'ended by its live notice');
  t.same(byName.fast.markets[M].behind, [], 'the reading socket was never told behind');

  const screenReply = await http<Screen>(svc.url, `/api/v1/record/screen?conn=${byName.slow.conn}&at=${whileBehind}`);
  api.check(t, 'GET', '/api/v1/record/screen', screenReply);
  const screen = screenReply.body;
  const heldThen = slowSeqs[slowSeqs.indexOf(gaps[0].from - 1)];
  t.ok(screen.markets[0].behind, 'while behind, the screen says so');
  t.equal(screen.markets[0].odds.seq, heldThen, 'and shows the image it last received before its skip');
  t.match(screen.markets[0].freshness, { at: told[0].start, frame: { op: 'freshness', mid: M, live: false, why: 'behind', at: told[0].since } }, 'and that it was told behind');
  const after = (await http<Screen>(svc.url, `/api/v1/record/screen?conn=${byName.slow.conn}&at=${told[0].end}`)).body;
  t.equal(after.markets[0].behind, null, 'told live, it was on its topic again');
  t.not((after.markets[0].freshness?.frame as Obj | undefined)?.why, 'behind', 'and no longer told behind');
  const end = (await http<{ markets: { odds: Obj }[] }>(svc.url, `/api/v1/record/screen?conn=${byName.fast.conn}&at=${Date.now()}`)).body;
  t.same(end.markets, [], 'a closed socket\'s screen holds nothing');
});
