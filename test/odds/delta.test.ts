import t from 'tap';
import { applyDelta, diff as diffOf } from '../../src/odds/delta.js';
import type { DeltaMessage, OddsMessage, WireOddsImage } from '../../src/odds/messages.js';
import { imageOf } from '../helpers/images.js';

/** The delta between two images written in wire keys. */
const diff = (a: WireOddsImage, b: WireOddsImage) => diffOf(imageOf(a), imageOf(b));

const image: WireOddsImage = {
  mid: '1.1', ts: 1, st: 'OPEN', ip: true, tv: 100, r: [
    { rid: 1, st: 'ACTIVE', b: [[2, 10], [1.99, 20], [1.98, 30]], l: [[2.02, 5]], ltp: 2, tv: 50 },
    { rid: 2, st: 'ACTIVE', b: [[3, 1]], l: [[3.1, 2], [3.2, 3]], ltp: 3, tv: 50 },
  ],
};
const held: OddsMessage = { op: 'odds', epoch: 'm1', seq: 4, pt: 1, con: false, cf: false, ...image };
const delta = (to: WireOddsImage, from = 4): DeltaMessage => ({ op: 'delta', mid: to.mid, epoch: 'm1', seq: from + 1, from, pt: 2, ...diff(image, to)! });
const r0 = (x: Partial<WireOddsImage['r'][0]>) => ({ ...image, r: [{ ...image.r[0], ...x }, image.r[1]] });

t.test('a changed level, a vanished best level and a new one each come back exactly', async (t) => {
  for (const to of [
    r0({ b: [[2, 11], [1.99, 20], [1.98, 30]] }),
    r0({ b: [[1.99, 20], [1.98, 30]] }),
    r0({ b: [[2.01, 4], [2, 10], [1.99, 20], [1.98, 30]] }),
    { ...r0({ st: 'SUSPENDED', ltp: 1.99, tv: 60 }), st: 'SUSPENDED' as const, tv: 110 },
  ]) {
    const d = delta(to);
    t.same(d.r.map((x) => x.rid), [1], 'only the runner that changed is listed');
    const { op: _op, epoch: _e, seq: _s, pt: _p, con: _c, cf: _f, ...back } = applyDelta(held, d)!;
    t.strictSame(back, to);
  }
});

t.test('a suspension\'s reason comes whole with each delta: given when the image has one, absent when it has none', async (t) => {
  const stopped = { ...image, st: 'SUSPENDED' as const, sr: 'goal' };
  const d = delta(stopped);
  t.same([d.st, d.sr, d.r], ['SUSPENDED', 'goal', []], 'no runner moved: the state alone');
  t.equal(applyDelta(held, d)!.sr, 'goal');
  const reopened = { op: 'delta' as const, mid: '1.1', epoch: 'm1', seq: 6, from: 5, pt: 3, ...diff(stopped, image)! };
  t.notOk('sr' in reopened, 'open again: no reason');
  t.equal(applyDelta({ ...held, seq: 5, ...stopped }, reopened)!.sr, undefined, 'and the image it leads to has none');
});

t.test('a level that vanishes at the bottom is cleared with [i, 0, 0]', async (t) => {
  t.strictSame(delta(r0({ b: [[2, 10], [1.99, 20]] })).r[0].b, [[2, 0, 0]]);
});

t.test('no delta can say a change of runners or a known ltp or tv becoming unknown', async (t) => {
  t.equal(diff(image, { ...image, r: [image.r[1], image.r[0]] }), undefined, 'runners reordered');
  t.equal(diff(image, { ...image, r: [image.r[0]] }), undefined, 'a runner gone');
  t.equal(diff(image, r0({ ltp: undefined })), undefined, 'ltp unknown');
  t.equal(diff(image, { ...image, tv: undefined }), undefined, 'market tv unknown');
});

t.test('a delta does not apply', async (t) => {
  const d = delta(r0({ b: [[2, 11], [1.99, 20], [1.98, 30]] }));
  t.equal(applyDelta({ ...held, seq: 3 }, d), undefined, 'to another seq than from');
  t.equal(applyDelta({ ...held, epoch: 'm2' }, d), undefined, 'in another epoch');
  t.equal(applyDelta(held, { ...d, r: [{ rid: 9, b: [[0, 2, 1]] }] }), undefined, 'naming a runner the image lacks');
  t.equal(applyDelta(held, { ...d, r: [{ rid: 1, b: [[1, 0, 0]] }] }), undefined, 'leaving a gap in a ladder');
  t.equal(applyDelta(held, { ...d, r: [{ rid: 1, b: [[1e9, 2, 1]] }] }), undefined, 'setting a position far past the ladder');
});
