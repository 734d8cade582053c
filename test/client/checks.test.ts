/**
 * The client's own defences, as units: the frame checks (one table per op), the book's epoch and
 * seq memory and its receipt delays, and the bounds on asking for markets again.
 */
import t from 'tap';
import { FRAMES, check, readFrame } from '../../src/client/checks.js';
import { MarketBook, PAST_EPOCHS } from '../../src/client/market-book.js';
import { RESYNC, Resyncs } from '../../src/client/resyncs.js';
import { encodeProto } from '../../src/odds/codec.js';
import type { OddsMessage, ServerMessage } from '../../src/odds/messages.js';
import { FakeClock } from '../helpers/clock.js';

const odds: OddsMessage = {
  op: 'odds', mid: '1.234', epoch: 'm1abc', seq: 7, ts: 1700000000000, pt: 1700000000005, st: 'OPEN', ip: true, con: false, cf: false,
  r: [{ rid: 101, st: 'ACTIVE', b: [[1.95, 120.5]], l: [[1.97, 80]], ltp: 1.96, tv: 5 }, { rid: 102, st: 'REMOVED', b: [], l: [] }], tv: 10,
};

/** A valid frame of every op the client reads. */
const VALID: ServerMessage[] = [
  odds,
  { op: 'delta', mid: '1.234', epoch: 'm1abc', seq: 8, from: 7, ts: 1, pt: 2, st: 'OPEN', ip: true, r: [{ rid: 101, b: [[0, 1.96, 10], [1, 0, 0]], ltp: 1.96 }] },
  { op: 'ack', id: 9, status: 1, message: 'Subscribed from market 1.1', current: 1 },
  { op: 'notice', status: 0, message: 'did not fit' },
  { op: 'market', mid: '1.1', s: true, go: false, rt: false },
  { op: 'result', mid: '1.1', mt: 'match-odd', res: '101', rt: false, ia: false },
  { op: 'unsubscribed', mids: ['1.1', '1.2'] },
  { op: 'feed', status: 'STALE' },
  { op: 'hb', ts: 1700000000123 },
  { op: 'clock', ts: 1700000000456 },
  { op: 'freshness', mid: '1.234', live: false, why: 'late', at: 1700000000456 },
];

/** Values of the wrong type or out of range for any key. */
const WRONG: unknown[] = [undefined, null, '', 'x', -1, 1.5, NaN, Infinity, true, [], {}, [[1]], 'bad mid!', 2 ** 60];

t.test('a valid frame of every op passes, extra keys and all', async (t) => {
  t.same(Object.keys(FRAMES).sort(), [...new Set(VALID.map((m) => m.op))].sort(), 'one sample per op of the table');
  for (const msg of VALID) {
    t.same(check(msg), { msg }, msg.op);
    t.same(check({ ...msg, later: 1 }), { msg: { ...msg, later: 1 } }, `${msg.op} with a key from a newer server`);
  }
});

t.test('every key the client reads, missing or of the wrong type, drops the frame with an error naming the key', async (t) => {
  for (const msg of VALID) {
    for (const key of Object.keys(FRAMES[msg.op].keys)) {
      for (const wrong of WRONG) {
        const bad = { ...msg, [key]: wrong };
        const read = check(bad);
        // Some wrong values are fine for some keys (absent for an optional one, '' for a message text);
        // a frame may still be dropped for how its keys go together (tested below).
        if ('msg' in read || FRAMES[msg.op].keys[key].ok(wrong)) {
          t.ok(FRAMES[msg.op].keys[key].ok(wrong), `${msg.op}.${key} = ${JSON.stringify(wrong)} passes only where its rule allows it`);
          continue;
        }
        t.match(read, { error: new RegExp(`^${msg.op} frame dropped: ${key} must be `) }, `${msg.op}.${key} = ${JSON.stringify(wrong)}`);
      }
    }
  }
});

t.test('freshness: a stale market says why, a live one does not', async (t) => {
  const stale = VALID.find((m) => m.op === 'freshness')!;
  t.same(check({ ...stale, live: true, why: undefined }), { msg: { ...stale, live: true, why: undefined } });
  t.same(check({ ...stale, why: undefined }), { error: 'freshness frame dropped: a stale market must say why' });
  t.same(check({ ...stale, live: true }), { error: 'freshness frame dropped: a live market has no why' });
  t.match(check({ ...stale, why: 'tired' }), { error: /^freshness frame dropped: why must be / });
});

t.test('nested shapes: runners, ladders and delta changes are checked to the last number', async (t) => {
  const runner = (r: Record<string, unknown>) => check({ ...odds, r: [{ ...odds.r[0], ...r }] });
  t.match(runner({ rid: 0 }), { error: /r must be a list of at most 500 runners/ });
  t.match(runner({ st: 'OPEN' }), { error: /r must be/ });
  t.match(runner({ b: [[1.5]] }), { error: /r must be/ });
  t.match(runner({ b: [[1.5, -1]] }), { error: /r must be/ });
  t.match(runner({ l: Array.from({ length: 11 }, () => [2, 1]) }), { error: /r must be/ }, 'more levels than a ladder has');
  t.match(runner({ ltp: 'x' }), { error: /r must be/ });
  t.match(check({ ...odds, r: Array.from({ length: 501 }, (_, i) => ({ rid: i + 1, st: 'ACTIVE', b: [], l: [] })) }), { error: /r must be/ });
  const delta = VALID[1];
  t.match(check({ ...delta, r: [{ rid: 101, b: [[0, 1]] }] }), { error: /r must be a list of at most 500 runner changes/ });
  t.match(check({ ...delta, r: [{ rid: 101, b: [[-1, 1, 1]] }] }), { error: /r must be/ });
  t.match(check({ ...delta, r: [{ rid: 101, b: [[20, 1, 1]] }] }), { error: /r must be/ }, 'a position no ladder reaches');
  t.match(check({ ...delta, r: [{ rid: 101, st: 'nope' }] }), { error: /r must be/ });
  t.match(check({ op: 'unsubscribed', mids: ['1.1', 7] }), { error: /mids must be a list of market IDs/ });
});

t.test('a delta whose seq is not above its from is no delta: dropped', async (t) => {
  t.match(check({ ...VALID[1], seq: 7 }), { error: 'delta frame dropped: seq 7 must be above from 7' });
  t.match(check({ ...VALID[1], seq: 3, from: 10 }), { error: 'delta frame dropped: seq 3 must be above from 10' });
});

t.test('not an object, no op, an op of a newer server', async (t) => {
  for (const v of [null, 3, 'odds', [VALID[0]]]) t.same(check(v), { error: 'a frame must be a JSON object' });
  t.same(check({ mid: '1.1' }), { error: 'a frame must have an op' });
  t.same(check({ op: 7 }), { error: 'a frame must have an op' });
  t.same(check({ op: 'weather', mid: '1.1' }), { unknown: true }, 'skipped without an error');
  t.same(check({ op: 'toString' }), { unknown: true }, 'inherited names are no ops');
});

t.test('readFrame: JSON text, protobuf bytes, and what is neither', async (t) => {
  t.same(readFrame(JSON.stringify(odds)), { msg: odds });
  t.match(readFrame('{"op":"odds"'), { error: /^undecodable frame: / });
  const bytes = encodeProto(odds);
  t.same(readFrame(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength)), { msg: odds }, 'an ArrayBuffer');
  t.same(readFrame(bytes), { msg: odds }, 'a view of one');
  t.same(readFrame(new ArrayBuffer(0)), { unknown: true }, 'a message of no kind this client knows');
  t.match(readFrame(new Uint8Array([0x0a, 0xff, 0xff, 0xff])), { error: /^undecodable frame: / }, 'cut protobuf');
  t.match(readFrame(encodeProto({ ...odds, seq: 0, mid: '' })), { error: /^odds frame dropped: mid must be/ }, 'protobuf that decodes but is wrong');
  t.match(readFrame(encodeProto({ ...odds, ts: NaN })), { error: /ts must be a time/ });
  t.same(readFrame(42), { error: 'a frame must be text or binary' });
});

const frame = (epoch: string, seq: number, extra: Partial<OddsMessage> = {}): OddsMessage => ({ ...odds, epoch, seq, ...extra });

t.test('the book never takes back an older seq of an epoch it has left', async (t) => {
  const book = new MarketBook();
  t.ok(book.apply(frame('A', 10)));
  t.notOk(book.apply(frame('A', 10)), 'the same seq');
  t.notOk(book.apply(frame('A', 9)), 'an older seq');
  t.ok(book.apply(frame('B', 1)), 'another epoch replaces what is held');
  t.notOk(book.apply(frame('A', 3)), 'back to A with a seq below the one A had');
  t.notOk(book.apply(frame('A', 10)), 'or equal to it');
  t.ok(book.apply(frame('A', 11)), 'back to A with a newer seq');
  t.notOk(book.apply(frame('B', 1)), 'and B, now left, keeps its seq too');
  t.ok(book.apply(frame('B', 2)));
  t.equal(book.get(odds.mid)?.seq, 2);
  book.delete(odds.mid);
  t.ok(book.apply(frame('A', 1)), 'a market dropped starts afresh');
});

t.test(`the book remembers ${PAST_EPOCHS} epochs a market has left, no more`, async (t) => {
  const book = new MarketBook();
  for (let e = 0; e <= PAST_EPOCHS + 1; e++) book.apply(frame(`E${e}`, 100));
  t.ok(book.apply(frame('E0', 1)), 'the epoch left longest ago is forgotten');
  t.notOk(book.apply(frame('E2', 100)), 'the others are not');
});

t.test('the book tells how late each market\'s newest frame arrived', async (t) => {
  const book = new MarketBook();
  t.equal(book.delay(odds.mid), undefined);
  book.apply(frame('A', 1, { ts: 1000, pt: 1200 }), 1250);
  t.same(book.delay(odds.mid), { at: 1250, source: 250, publish: 50 });
  book.apply(frame('A', 0, { ts: 5000, pt: 5000 }), 9000);
  t.same(book.delay(odds.mid), { at: 1250, source: 250, publish: 50 }, 'a frame not kept changes nothing');
});

/** Resyncs over a clock the test moves, and a sender that records what it was asked and answers when told. */
function resyncRig(sendable = true) {
  const clock = new FakeClock();
  const asked: string[] = [];
  const answers: (() => void)[] = [];
  const resyncs = new Resyncs((mid) => {
    if (!sendable) return undefined;
    asked.push(mid);
    return new Promise<void>((ok) => answers.push(ok));
  }, clock);
  return { resyncs, asked, answerAll: () => answers.splice(0).forEach((ok) => ok()), tick: (ms: number) => clock.advance(ms) };
}

t.test('resyncs: one at a time per market, and none within the per-market bound of the one before', async (t) => {
  const { resyncs, asked, answerAll, tick } = resyncRig();
  t.teardown(() => resyncs.stop());
  for (let i = 0; i < 100; i++) resyncs.ask('m');
  t.same(asked, ['m'], 'a hundred failed deltas ask once while the answer is awaited');
  answerAll();
  await Promise.resolve();
  resyncs.ask('m');
  t.same(asked, ['m'], 'answered, but within the bound: owed, not sent');
  tick(RESYNC.perMarketMs - 1);
  t.same(asked, ['m'], 'not a millisecond before the bound');
  tick(1000 / RESYNC.perSecond);
  t.equal(asked.length, 2, 'the owed one goes at the first look once the bound allows');
  resyncs.ask('m');
  t.equal(asked.length, 2, 'still waiting for its answer');
});

t.test(`resyncs: at most ${RESYNC.perSecond} a second in all, the rest owed and sent as the budget refills`, async (t) => {
  const { resyncs, asked, tick } = resyncRig();
  t.teardown(() => resyncs.stop());
  for (let i = 0; i < 50; i++) resyncs.ask(`m${i}`);
  t.equal(asked.length, RESYNC.perSecond, 'a burst takes one second\'s budget');
  tick(1000);
  t.equal(asked.length, 2 * RESYNC.perSecond, 'a second later, one more second\'s worth, one at each refill');
  tick(1000 / RESYNC.perSecond - 1);
  t.equal(asked.length, 2 * RESYNC.perSecond, 'and no more until the next token');
  tick(1);
  t.equal(asked.length, 2 * RESYNC.perSecond + 1);
  t.equal(new Set(asked).size, asked.length, 'each market asked for once');
});

t.test('resyncs: nothing owed for a market forgotten, after a reconnect, or that cannot be asked for', async (t) => {
  const { resyncs, asked, tick } = resyncRig();
  t.teardown(() => resyncs.stop());
  for (let i = 0; i < RESYNC.perSecond + 2; i++) resyncs.ask(`m${i}`);
  resyncs.forget(`m${RESYNC.perSecond}`);
  resyncs.reset();
  tick(5000);
  t.equal(asked.length, RESYNC.perSecond, 'the owed ones are dropped: the reconnect resumes every market');
  const idle = resyncRig(false);
  for (let i = 0; i < 100; i++) idle.resyncs.ask('m');
  t.same(idle.asked, [], 'nothing sent while there is no connection');
});
