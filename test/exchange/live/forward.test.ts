/**
 * The live adapter's hand-over, over a fake of the service's /ingest socket (it acks when the
 * test says, as the service would): a busy market's changes merged while the
 * service is behind, the outbox bounded in bytes and saying when it fills, acks accounted by
 * market, and a market whose book broke asked afresh.
 */
import t, { type Test } from 'tap';
import { Ledger } from '../../../src/exchange/ledger.js';
import { Forwarder } from '../../../src/exchange/live/forward.js';
import { Outbox } from '../../../src/exchange/outbox.js';
import { Publisher } from '../../../src/exchange/publisher.js';
import type { MarketChangeMessage } from '../../../src/exchange/stream.js';
import { Translator } from '../../../src/exchange/translate.js';
import { DEFAULT_LIMITS, FakeSocket } from '../fake-ingest.js';
import { eventually, waitFor } from '../../helpers/wait.js';
import { FakeClock } from '../../helpers/clock.js';
import { DELTAS, IMAGE, MARKET_ID, RUNNERS } from '../esa-script.js';

type Obj = Record<string, any>;
interface Batch { id: number; data: Obj[] }

/**
 * The service's /ingest socket as the publisher sees it: it keeps every batch and acks only when
 * told (`ack`), or at once with `auto`, as the service would.
 */
function fakeService(t: Test, auto?: (b: Batch) => Obj) {
  const received: Batch[] = [];
  let acked = 0;
  const socket = new FakeSocket();
  const send = socket.send.bind(socket);
  socket.send = (text: string) => {
    send(text);
    const batch = JSON.parse(text) as Batch;
    received.push(batch);
    // Answered on a later turn, as a socket's answer comes.
    if (auto) setImmediate(() => socket.listener?.message(JSON.stringify({ op: 'ack', id: batch.id, ...auto(batch) })));
  };
  t.teardown(() => socket.open && socket.close());
  return {
    socket,
    received,
    /** Batches acked so far. */
    get acked() {
      return acked;
    },
    /** Acks the next batch not yet acked. */
    ack(extra: Obj = {}) {
      const b = received[acked++];
      socket.listener!.message(JSON.stringify({ op: 'ack', id: b.id, status: 1, message: `Ingested ${b.data.length} items`, ...extra }));
    },
  };
}

const change = (m: object) => m as unknown as MarketChangeMessage;

function adapter(t: Test, svc: ReturnType<typeof fakeService>, opts: { window?: number; maxBytes?: number; refreshMs?: number; clock?: FakeClock } = {}) {
  const publisher = new Publisher(svc.socket, { window: opts.window ?? 1, limits: DEFAULT_LIMITS, clock: opts.clock ?? new FakeClock() });
  t.teardown(() => publisher.close());
  const ledger = new Ledger();
  const translator = new Translator({ ledger });
  const problems: string[] = [];
  const pressure: boolean[] = [];
  const outbox = new Outbox({ publisher, translator, ledger, problem: (p) => problems.push(p), maxBytes: opts.maxBytes, pressure: (f) => pressure.push(f) });
  const refreshes: number[] = [];
  const forwarder = new Forwarder({ translator, outbox, problem: (p) => problems.push(p), refresh: () => refreshes.push(Date.now()) > 0, refreshMs: opts.refreshMs, clock: opts.clock });
  t.teardown(() => forwarder.stop());
  return { publisher, ledger, translator, outbox, forwarder, problems, pressure, refreshes };
}

const odds = (b: Batch) => b.data.filter((i) => i.kind === 'odds');
const best = (image: Obj, rid: number) => image.r.find((r: Obj) => r.rid === rid).b[0];

t.test('while the service is behind, a market\'s changes merge into one image of its newest book', async (t) => {
  const svc = fakeService(t);
  const a = adapter(t, svc);
  a.forwarder.push(change(IMAGE), 'image');
  // The market's rows go first, in batches of their own (the rows its definition shares, then its own): acked one by one.
  await waitFor(() => {
    if (svc.received.length > svc.acked && !odds(svc.received.at(-1)!).length) svc.ack();
    return svc.received.some((b) => odds(b).length > 0);
  }, 'the first image sent', 5000, 5);
  const first = svc.received.length;
  const sent = a.outbox.stats.batches;
  for (const d of DELTAS) a.forwarder.push(change(d), d.clk);
  await new Promise((ok) => setImmediate(ok));
  t.equal(a.outbox.stats.batches, sent, 'nothing more went out while the window was full');
  svc.ack();
  await eventually(async () => svc.received.length, (n) => n === first + 1);
  const merged = svc.received[first];
  t.equal(merged.data.length, 1, 'eight changes, one image');
  const last = DELTAS.at(-1)!;
  t.same(odds(merged)[0].ts, last.pt, 'the newest change\'s time');
  t.same(best(odds(merged)[0], RUNNERS.away), [2.08, 108], 'the newest book');
  svc.ack();
  await a.outbox.flush();
  t.same(a.ledger.get(MARKET_ID), { published: 2, withheld: 0, unapplied: 0, refused: 0 });
});

t.test('the outbox is bounded in bytes: it says when it fills and when it has room again', async (t) => {
  const svc = fakeService(t);
  const a = adapter(t, svc, { maxBytes: 64 * 1024 });
  a.forwarder.push(change(IMAGE), 'image');
  await eventually(async () => svc.received.length, (n) => n === 1);
  // Reference rows are never merged: many markets' definitions fill the outbox.
  const def = IMAGE.mc[0].marketDefinition;
  for (let i = 0; i < 200; i++) a.forwarder.push(change({ op: 'mcm', pt: 2, mc: [{ id: `1.3${String(i).padStart(8, '0')}`, marketDefinition: { ...def, eventId: String(40000000 + i) } }] }), `m${i}`);
  t.same(a.pressure, [true], 'full');
  t.ok(a.outbox.queuedBytes >= 64 * 1024);
  let acked = 0;
  const ackNext = () => {
    if (svc.received.length > acked) {
      svc.ack();
      acked++;
    }
    return a.pressure.length >= 2;
  };
  await waitFor(ackNext, () => `room again in the outbox as the service acks (${acked} acked)`, 10000, 5);
  t.same(a.pressure, [true, false], 'room again once half of it went');
  t.ok(a.outbox.queuedBytes <= 32 * 1024);
});

t.test('acks are accounted by market: refused items one by one, a market\'s rows refused whole; the adapter goes on', async (t) => {
  const svc = fakeService(t, (b) => {
    const bad = b.data.findIndex((i) => i.mid === '1.2');
    if (b.data.some((i) => i.kind === 'market' && i.mid === '1.3')) return { status: 0, message: 'item 0 (market 1.3): mid 1.3 is already a nested market' };
    return bad < 0 ? { status: 1, message: 'ok' } : { status: 1, message: 'Ingested; refused 1', refused: [{ i: bad, mid: '1.2', message: `item ${bad} (odds 1.2): market 1.2 is not known` }] };
  });
  const a = adapter(t, svc, { window: 4 });
  a.outbox.push({ kind: 'odds', mid: '1.1', ts: 1, st: 'OPEN', ip: false, r: [] });
  a.outbox.push({ kind: 'odds', mid: '1.2', ts: 1, st: 'OPEN', ip: false, r: [] });
  await a.outbox.flush();
  // Two markets' rows, queued together: each market's go apart, and the rows its definition shares apart from its own.
  a.outbox.push({ kind: 'sport', si: 99, na: 'Darts', a: true }, '1.3');
  a.outbox.push({ kind: 'market', mid: '1.3', go: true });
  a.outbox.push({ kind: 'market', mid: '1.4', go: true });
  // One the service's rules refuse: kept back, never sent.
  a.outbox.push({ kind: 'market', mid: '1.5', na: 'x'.repeat(501) });
  a.outbox.push({ kind: 'odds', mid: '1.1', ts: 2, st: 'OPEN', ip: false, r: [] });
  await a.outbox.flush();
  t.same(svc.received.slice(1).map((b) => b.data.map((i) => `${i.kind} ${i.si ?? i.mid}`)), [['sport 99'], ['market 1.3'], ['market 1.4'], ['odds 1.1']], 'each market\'s rows in batches of their own');
  t.match(a.ledger.get('1.1'), { published: 2, refused: 0 });
  t.match(a.ledger.get('1.2'), { published: 0, refused: 1, why: 'item 1 (odds 1.2): market 1.2 is not known' });
  t.match(a.ledger.get('1.3'), { refused: 1, why: 'item 0 (market 1.3): mid 1.3 is already a nested market' });
  t.same(a.ledger.get('1.4'), undefined, 'the market beside it: nothing refused');
  t.match(a.ledger.get('1.5'), { withheld: 1, why: 'market 1.5: na must be a string of at most 500 characters' });
  t.match(a.problems, [
    /refused odds of 1\.2: item 1/,
    'kept back, as the service would refuse it: market 1.5: na must be a string of at most 500 characters',
    /refused the reference rows of market 1\.3: item 0 \(market 1\.3\)/,
  ]);
});

t.test('a market whose change cannot be applied: stale at once, the subscription asked afresh after the wait, live at the fresh image', async (t) => {
  const svc = fakeService(t, () => ({ status: 1, message: 'ok' }));
  const clock = new FakeClock();
  const a = adapter(t, svc, { window: 8, refreshMs: 150, clock });
  a.forwarder.push(change(IMAGE), 'image');
  await a.outbox.flush();
  a.forwarder.push(change({ op: 'mcm', pt: IMAGE.pt + 1, mc: [{ id: MARKET_ID, rc: [{ id: RUNNERS.home, atb: 'garbage' }] }] }), 'bad');
  await a.outbox.flush();
  t.same(svc.received.flatMap((b) => b.data).map((i) => i.kind), ['sport', 'league', 'event', 'market', 'terms', 'odds', 'stale']);
  t.same(svc.received.at(-1)!.data.at(-1), { kind: 'stale', mid: MARKET_ID, why: 'unreliable' });
  t.match(a.problems, [/^bad: mc\[0\]\.rc\[0\]\.atb must be an array/]);
  clock.advance(149);
  t.equal(a.refreshes.length, 0, 'not before the wait');
  clock.advance(1);
  t.equal(a.refreshes.length, 1, 'asked for a fresh image');
  a.forwarder.push(change({ ...IMAGE, pt: IMAGE.pt + 2 }), 'fresh');
  await a.outbox.flush();
  t.match(svc.received.at(-1)!.data.at(-1), { kind: 'odds', mid: MARKET_ID, ts: IMAGE.pt + 2 }, 'live again');
  clock.advance(400);
  t.equal(a.refreshes.length, 1, 'not asked again in more than two refresh intervals');
  // Broken again, and the fresh image leaves it out (the market left the subscription): given up after one more ask.
  a.forwarder.push(change({ op: 'mcm', pt: IMAGE.pt + 3, mc: [{ id: MARKET_ID, rc: [{ id: RUNNERS.home, atb: 'garbage' }] }] }), 'bad again');
  clock.advance(150);
  t.equal(a.refreshes.length, 2, 'asked again once the wait passed');
  a.forwarder.push(change({ op: 'mcm', pt: IMAGE.pt + 4, ct: 'SUB_IMAGE', mc: [] }), 'image without it');
  clock.advance(500);
  t.equal(a.refreshes.length, 2, 'a market the fresh image did not mend is not asked for again');
});
