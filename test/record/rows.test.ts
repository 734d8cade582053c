/**
 * How images are stored (unit, no database): each as its change from the one before, whole at
 * the first of a market, of an epoch and of a day, every KEYFRAME_EVERY changes, and when an
 * image arrives late; replaying the stored changes from the last whole image gives every image
 * back exactly, a suspension's reason included.
 */
import t from 'tap';
import { KEYFRAME_EVERY, RowEncoder, readBody, replay } from '../../src/record/rows.js';
import { DAY_MS } from '../../src/record/partitions.js';
import type { DeltaMessage, OddsMessage, WireOddsImage } from '../../src/odds/messages.js';
import type { OddsImage } from '../../src/odds/image.js';
import { imageOf, wireOf } from '../helpers/images.js';
import type { RecordEntry } from '../../src/bus/types.js';

/** Every eleventh image (the first whole one among them) suspended for a goal. */
const wire = (mid: string, i: number, ts: number): WireOddsImage => ({
  mid, ts, ...(i % 11 === 1 ? { st: 'SUSPENDED', sr: 'goal' } : { st: 'OPEN' }), ip: i % 7 === 0,
  r: [{ rid: 1, st: 'ACTIVE', b: [[2 + (i % 5) / 100, 10 + i], [1.98, 5]], l: [[2.1, 7]], ltp: 2, tv: 100 + i }, { rid: 2, st: 'ACTIVE', b: [[3, 1]], l: [[3.1, 2 + (i % 3)]] }],
});
const image = (mid: string, i: number, ts: number): OddsImage => imageOf(wire(mid, i, ts));

interface Row { mid: string; pt: number; epoch: string; seq: number; base: number | null; body: Buffer }

/** The COPY text back into rows, as Postgres would hold them. */
function rowsOf(lines: string[]): Row[] {
  return lines.map((l) => {
    const [mid, pt, epoch, seq, , base, body] = l.split('\t');
    return { mid, pt: Number(pt), epoch, seq: Number(seq), base: base === '\\N' ? null : Number(base), body: Buffer.from(body.slice(3), 'hex') };
  });
}

t.test('every image comes back from the rows, changes replayed on the image they name', async (t) => {
  const enc = new RowEncoder();
  const day = 20_000 * DAY_MS;
  const entries: RecordEntry[] = [];
  for (let i = 1; i <= 150; i++) entries.push({ kind: 'odds', o: { epoch: 'e1', seq: i, publishTime: day + i, image: image('1.1', i, i) } });
  // The next day: the first image of a day is whole, so a partition never needs another.
  entries.push({ kind: 'odds', o: { epoch: 'e1', seq: 151, publishTime: day + DAY_MS + 1, image: image('1.1', 151, 151) } });
  // A new epoch starts whole too.
  entries.push({ kind: 'odds', o: { epoch: 'e2', seq: 1, publishTime: day + DAY_MS + 2, image: image('1.1', 152, 152) } });
  const rows = rowsOf(enc.encode(entries).lines.record_odds);
  t.equal(rows.length, entries.length, 'one row an image');
  const whole = rows.filter((r) => r.base === null).map((r) => `${r.epoch}/${r.seq}`);
  t.same(whole, ['e1/1', `e1/${KEYFRAME_EVERY + 1}`, `e1/${2 * KEYFRAME_EVERY + 1}`, 'e1/151', 'e2/1'], 'whole images where they must be, and nowhere else');
  const held = new Map<string, OddsMessage>();
  for (const r of rows) {
    const msg = readBody(r);
    const got = msg.op === 'odds' ? msg : replay(held.get(`${r.epoch}/${r.base}`)!, msg as DeltaMessage);
    held.set(`${r.epoch}/${r.seq}`, got!);
    const want = entries.find((e) => e.kind === 'odds' && e.o.epoch === r.epoch && e.o.seq === r.seq)!;
    if (want.kind === 'odds') t.same({ ...got!, op: undefined, con: undefined, cf: undefined }, { ...wireOf(want.o.image), epoch: r.epoch, seq: r.seq, pt: r.pt, op: undefined, con: undefined, cf: undefined }, `${r.epoch}/${r.seq}`);
  }
  t.ok(rows.filter((r) => r.base !== null).every((r) => r.body.length < rows[0].body.length), 'a change is smaller than a whole image');
});

t.test('an image that arrives after a newer one is stored whole and changes nothing held', async (t) => {
  const enc = new RowEncoder();
  const o = (seq: number) => ({ kind: 'odds' as const, o: { epoch: 'e', seq, publishTime: 1000 + seq, image: image('1.2', seq, seq) } });
  const rows = rowsOf(enc.encode([o(1), o(3), o(2), o(4), o(4)]).lines.record_odds);
  t.same(rows.map((r) => [r.seq, r.base]), [[1, null], [3, 1], [2, null], [4, 3]], 'the late one whole, the next from the newest held, a repeat not at all');
});

t.test('a source time with a fraction of a ms is stored in whole ms, the image keeping it exact', async (t) => {
  const enc = new RowEncoder();
  const lines = enc.encode([1, 2].map((seq) => ({ kind: 'odds' as const, o: { epoch: 'e', seq, publishTime: 1000 + seq, image: image('1.3', seq, 1795921611541.2083 + seq) } }))).lines.record_odds;
  t.same(lines.map((l) => l.split('\t')[4]), ['1795921611542', '1795921611543'], 'the bigint column takes it');
  t.equal(readBody(rowsOf(lines)[0]).op === 'odds' && (readBody(rowsOf(lines)[0]) as OddsMessage).ts, 1795921611542.2083, 'the image as it came');
});

t.test('notes that would break COPY or name nothing are refused, counted', async (t) => {
  const enc = new RowEncoder();
  const note = (topic: 'state' | 'ledger' | 'sent', body: Record<string, unknown>, src = 'p1') => ({ kind: 'note' as const, note: { topic, src, n: 1, at: 5, body } });
  const rows = enc.encode([
    note('state', { op: 'market', mid: '1.1', s: true, note: 'a\\tb' }),
    note('state', { op: 'hb', mid: '1.1' }),
    note('ledger', { conn: 'p1.1\t', op: 'open' }),
    note('sent', { variant: 'j0.100', mid: '1.1', epoch: 'e', seq: 2 }, 'p\n1'),
  ]);
  t.equal(rows.invalid, 3);
  t.equal(rows.lines.record_states.length, 1);
  t.match(rows.lines.record_states[0], /"note":"a\\\\\\\\tb"/, 'a backslash in JSON is written twice for COPY');
});
