import t from 'tap';
import { itemsFromRest } from '../../src/ingest/from-rest.js';

const sport = { si: 4, na: 'Cricket', a: true };
const event = { eid: 30000001, na: 'India v Australia', le: 'Test Series', st: '2030-01-01T10:00:00.000Z', go: false, ip: false, si: 4, li: 7, tv: null };
const market = { mid: '1.1', eid: 30000001, na: 'Match Odds', si: 4, s: true, go: false, ty: 'match-odd', rt: false, r: [{ rid: 1, na: 'India' }] };
const result = { mid: '1.1', mt: 'match-odd', res: '1', rt: false, ia: false };

t.test('the sport list becomes sport items', async (t) => {
  t.strictSame(itemsFromRest([sport, { ...sport, si: 1 }]), { items: [{ ...sport, kind: 'sport' }, { ...sport, si: 1, kind: 'sport' }] });
});

t.test('the event list becomes event items from every sport, keeping le and li for the league', async (t) => {
  const other = { ...event, eid: 2, si: 1 };
  t.strictSame(itemsFromRest({ data: { 1: [other], 2: [], 4: [event] } }), { items: [{ ...other, kind: 'event' }, { ...event, kind: 'event' }] });
});

t.test('the market list becomes market items, optional keys kept', async (t) => {
  const race = { ...market, mid: '1.2', ty: 'player-race', di: 3, if: null, m: [{ mid: '1.2.1', s: true, go: false, r: [], if: null }] };
  delete (race as { r?: unknown }).r;
  t.strictSame(itemsFromRest({ data: { 30000001: [market, race] } }), { items: [{ ...market, kind: 'market' }, { ...race, kind: 'market' }] });
});

t.test('the result list becomes result items', async (t) => {
  t.strictSame(itemsFromRest([result, { ...result, mid: '1.2', res: '' }]), { items: [{ ...result, kind: 'result' }, { ...result, mid: '1.2', res: '', kind: 'result' }] });
});

t.test('an ingest batch is taken as it is', async (t) => {
  const data = [{ kind: 'league', li: 7, si: 4, na: 'Test Series' }, { kind: 'result', mid: '1.1', res: '1' }];
  t.strictSame(itemsFromRest({ data }), { items: data });
});

t.test('empty lists convert to no items', async (t) => {
  t.strictSame(itemsFromRest([]), { items: [] });
  t.strictSame(itemsFromRest({ data: {} }), { items: [] });
  t.strictSame(itemsFromRest({ data: { 4: [] } }), { items: [] });
  t.strictSame(itemsFromRest({ data: [] }), { items: [] });
});

t.test('a bad element stays an item for validation to reject, not a refused file', async (t) => {
  t.strictSame(itemsFromRest([sport, { si: -1 }]), { items: [{ ...sport, kind: 'sport' }, { si: -1, kind: 'sport' }] });
});

t.test('unknown shapes give an error saying what was expected', async (t) => {
  const cases: [unknown, RegExp][] = [
    [null, /holds null; expected one of: the sport list/],
    ['text', /holds a string; expected/],
    [42, /holds a number; expected/],
    [{ sports: [sport] }, /an object without a "data" key; expected/],
    [{ data: 'x' }, /"data" is a string; expected/],
    [[1, 2], /neither a sport \{si, na, a\} nor a result/],
    [[{ eid: 1 }], /neither a sport/],
    [{ data: { 4: { eid: 1 } } }, /data\["4"\] is an object, not an array/],
    [{ data: { 4: [{ na: 'x' }] } }, /neither events \(eid, \.\.\.\) nor markets \(mid, \.\.\.\)/],
    [{ data: { 4: [event, 'x'] } }, /data\["4"\]\[1\] is a string, but every event in the list must be an object/],
    [[sport, null], /element 1 is null/],
    [{ data: [{ kind: 'sport' }, 3] }, /data\[1\] is a number, but every item of an ingest batch must be an object/],
    [{ status: 0, message: 'si must list 1 to 50 IDs' }, /an error answer \("si must list 1 to 50 IDs"\), not data/],
  ];
  for (const [json, expected] of cases) {
    const out = itemsFromRest(json);
    t.ok('error' in out, `${JSON.stringify(json)} is refused`);
    if ('error' in out) t.match(out.error, expected);
  }
});
