import t from 'tap';
import { postJson, startTestService } from '../helpers/service.js';
import { Client, image, lineImage } from '../helpers/ws.js';
import type { OddsMessage } from '../../src/odds/messages.js';

/**
 * Subscribing as an exchange's market filter does: the markets of `eids` and `sis` narrowed by
 * market type (`tys`), country (`ccs`), betting type (`bts`) and turning in play (`tip`), against
 * a mixed set of markets, in both formats; markets created later, or whose terms move, taken
 * when they pass; the same limits, answers and resume as any subscribe.
 */
type Obj = Record<string, unknown>;
const svc = await startTestService(t, { DEMO_DATA: 'off' });
const ingest = async (...data: Obj[]) => {
  const r = await postJson<{ message: string }>(svc.url, '/api/v1/ingest', { data });
  if (r.status !== 200) throw new Error(`ingest: ${r.status} ${r.body.message}`);
};

const RACING = 7;
const CRICKET = 4;
const runners = [{ rid: 1, na: 'A' }, { rid: 2, na: 'B' }];
/** A race in each country: its win, place and a line market, each with the terms a race's markets have. */
const RACES = [['GB', 701], ['IE', 702], ['FR', 703]] as const;
const mid = (eid: number, n: number) => `7.${eid}${n}`;
await ingest(
  { kind: 'sport', si: RACING, na: 'Horse Racing', a: true }, { kind: 'sport', si: CRICKET, na: 'Cricket', a: true },
  { kind: 'league', li: 7001, si: RACING, na: 'Racing' }, { kind: 'league', li: 4001, si: CRICKET, na: 'T20' },
  ...RACES.flatMap(([cc, eid]) => [
    { kind: 'event', eid, na: `Race ${cc}`, st: '2030-06-01T14:30:00.000Z', si: RACING, li: 7001 },
    { kind: 'market', mid: mid(eid, 1), eid, na: 'Win', ty: 'winner-market', r: runners },
    { kind: 'terms', mid: mid(eid, 1), cc, tip: false, bt: 'ODDS', nw: 1 },
    { kind: 'market', mid: mid(eid, 2), eid, na: 'To Be Placed', ty: 'other-market', r: runners },
    { kind: 'terms', mid: mid(eid, 2), cc, tip: false, bt: 'ODDS', nw: 3 },
    { kind: 'market', mid: mid(eid, 3), eid, na: 'Winning Distance', ty: 'line-market' },
    { kind: 'terms', mid: mid(eid, 3), cc, bt: 'LINE', lmin: 0, lmax: 30, lint: 0.5 },
  ]),
  { kind: 'event', eid: 401, na: 'Harbour XI v Mill XI', st: '2030-06-01T14:30:00.000Z', si: CRICKET, li: 4001 },
  { kind: 'market', mid: '4.4011', eid: 401, na: 'Match Odds', ty: 'match-odd', r: runners },
  { kind: 'terms', mid: '4.4011', cc: 'IN', tip: true, bt: 'ODDS' },
  // A line market whose source gave no terms: its betting type is its type's, LINE; its country unknown.
  { kind: 'market', mid: '4.4012', eid: 401, na: '6 Over Runs', ty: 'session' },
);
const ALL = [...RACES.flatMap(([, eid]) => [1, 2, 3].map((n) => mid(eid, n))), '4.4011', '4.4012'];
const LINES = new Set(['7.7013', '7.7023', '7.7033', '4.4012']);
const quote = (m: string, price = 3) => (LINES.has(m) ? lineImage(m, 10 * price) : image(m, price));
await ingest(...ALL.map((m) => quote(m)));

/** The markets a socket was sent an image of. */
const imaged = (c: Client, from = 0) => [...new Set(c.frames.slice(from).filter((f): f is OddsMessage => f.op === 'odds').map((f) => f.mid))].sort();

for (const format of ['json', 'proto'] as const) {
  t.test(`${format}: each filter against the mixed set, and together`, async (t) => {
    const cases: [Obj, string[], string][] = [
      [{ sis: [RACING], tys: ['winner-market'] }, ['7.7011', '7.7021', '7.7031'], 'sport 7 (ty winner-market)'],
      [{ sis: [RACING, CRICKET], ccs: ['GB', 'IE'] }, ['7.7011', '7.7012', '7.7013', '7.7021', '7.7022', '7.7023'], 'sport 7,4 (cc GB,IE)'],
      [{ sis: [RACING, CRICKET], bts: ['LINE'] }, ['4.4012', '7.7013', '7.7023', '7.7033'], 'sport 7,4 (bt LINE)'],
      [{ sis: [RACING, CRICKET], tip: true }, ['4.4011'], 'sport 7,4 (tip true)'],
      [{ sis: [RACING, CRICKET], tip: false }, ['7.7011', '7.7012', '7.7021', '7.7022', '7.7031', '7.7032'], 'sport 7,4 (tip false)'],
      [{ eids: [701, 703], tys: ['winner-market', 'other-market'], ccs: ['GB'], bts: ['ODDS'], tip: false }, ['7.7011', '7.7012'],
        'event 701,703 (ty winner-market,other-market; cc GB; bt ODDS; tip false)'],
    ];
    for (const [filters, want, named] of cases) {
      const c = await Client.connect(svc.url, { format });
      const ack = await c.request({ op: 'subscribe', ...filters });
      t.equal(ack.message, `Subscribed from ${named} (${want.length} markets)`, JSON.stringify(filters));
      await c.settled();
      t.same(imaged(c), want, `the markets it passes: ${JSON.stringify(filters)}`);
      c.close();
    }
  });
}

t.test('markets created later, and markets whose terms move, are taken when they pass the narrowing', async (t) => {
  const c = await Client.connect(svc.url, { format: 'proto' });
  t.teardown(() => c.close());
  await c.request({ op: 'subscribe', sis: [RACING], tys: ['winner-market'], ccs: ['GB'] });
  await c.settled();
  t.same(imaged(c), ['7.7011']);
  const from = c.frames.length;
  await ingest(
    { kind: 'event', eid: 704, na: 'Race GB 2', st: '2030-06-01T15:00:00.000Z', si: RACING, li: 7001 },
    { kind: 'market', mid: '7.7041', eid: 704, na: 'Win', ty: 'winner-market', r: runners }, { kind: 'terms', mid: '7.7041', cc: 'GB' },
    { kind: 'market', mid: '7.7042', eid: 704, na: 'To Be Placed', ty: 'other-market', r: runners }, { kind: 'terms', mid: '7.7042', cc: 'GB', bt: 'ODDS' },
    { kind: 'terms', mid: '7.7031', cc: 'GB' },
    image('7.7041'), image('7.7042'), image('7.7031', 4),
  );
  await c.settled();
  t.same(imaged(c, from), ['7.7031', '7.7041'], 'the new GB win market, and the win market whose country became GB; not the place market');
});

t.test('resume: markets the filter covers that did not move get no image, and the ack counts them', async (t) => {
  const first = await Client.connect(svc.url);
  await first.request({ op: 'subscribe', sis: [RACING], bts: ['LINE'] });
  await first.settled();
  const held = first.frames.filter((f): f is OddsMessage => f.op === 'odds');
  first.close();
  t.same(held.map((f) => f.mid).sort(), ['7.7013', '7.7023', '7.7033']);
  await ingest(quote('7.7023', 5));
  const again = await Client.connect(svc.url);
  t.teardown(() => again.close());
  const since = { epoch: held[0].epoch, seqs: Object.fromEntries(held.map((f) => [f.mid, f.seq])) };
  const ack = await again.request({ op: 'subscribe', sis: [RACING], bts: ['LINE'], since });
  t.equal(ack.current, 2, 'two were current');
  await again.settled();
  t.same(imaged(again), ['7.7023'], 'only the market that moved');
});

t.test('the same limits and answers: bad values, too many, nothing to narrow, an unsubscribe narrowed; nothing changed', async (t) => {
  const c = await Client.connect(svc.url);
  t.teardown(() => c.close());
  const refused: [Obj, string][] = [
    [{ sis: [RACING], tys: ['match-odds'] }, 'tys[0] must be a market type (match-odd, '],
    [{ sis: [RACING], ccs: ['gb'] }, 'ccs[0] must be an ISO 3166 country code of two capital letters'],
    [{ sis: [RACING], bts: ['SPREAD'] }, 'bts[0] must be a betting type (ODDS, LINE, '],
    [{ sis: [RACING], tip: 'yes' }, 'tip must be true or false'],
    [{ sis: [RACING], ccs: Array.from({ length: 51 }, () => 'GB') }, 'ccs must list 1 to 50 values, got 51'],
    [{ mids: ['7.7011'], tys: ['winner-market'] }, 'tys, ccs, bts and tip narrow the markets of eids and sis: give eids or sis with them'],
  ];
  for (const [req, why] of refused) {
    const ack = await c.request({ op: 'subscribe', ...req } as never);
    t.equal(ack.status, 0, JSON.stringify(req));
    t.ok(ack.message.startsWith(why), ack.message);
  }
  const un = await c.request({ op: 'unsubscribe', sis: [RACING], tys: ['winner-market'] } as never);
  t.match(un, { status: 0, message: 'tys, ccs, bts and tip narrow a subscribe; an unsubscribe by eids or sis removes the whole filter' });
  await c.settled();
  t.same(imaged(c), [], 'nothing was taken');
});
