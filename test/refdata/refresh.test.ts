import t from 'tap';
import { ReadModel } from '../../src/refdata/model.js';

/**
 * A refresh reads every row it reloads before it swaps any in, over a database
 * fake whose market query the test holds: while it is held, readers see the
 * model as it was, never an event gone with its markets still listed.
 */
const SPORT = { si: 4, na: 'Cricket', a: true };
const EVENT = { eid: 1, na: 'A v B', le: 'League', st: new Date('2026-11-27T10:00:00Z'), go: false, ip: false, si: 4, li: 7, tv: null };
const MARKET = {
  mid: '1.1', eid: 1, na: 'Match Odds', si: 4, s: true, go: false, ty: 'match-odd', rt: false,
  has_if: false, info: null, di: null, bl: null, has_r: false, runners: [], nested: null,
};
const RESULT = { marketId: '1.1', marketType: 'match-odd', outcome: '', recalled: false, abandoned: false };

/** Postgres as the rows it holds: a query answers from the table it reads; market reads wait for `release` when held. */
class FakeDb {
  rows = { sports: [SPORT], events: [EVENT], markets: [MARKET], results: [RESULT] };
  held: (() => void)[] = [];
  hold = false;

  async query(sql: string): Promise<{ rows: unknown[] }> {
    if (sql.includes('parent_mid IS NOT NULL')) return { rows: [] };
    if (sql.includes('FROM sports')) return { rows: this.rows.sports };
    if (sql.includes('FROM events')) return { rows: this.rows.events };
    if (sql.includes('LEFT JOIN results')) return { rows: this.rows.results };
    if (this.hold) await new Promise<void>((ok) => this.held.push(ok));
    return { rows: this.rows.markets };
  }
}

t.test('an event deleted with its markets leaves the model in one step, after every row is read', async (t) => {
  const db = new FakeDb();
  const model = new ReadModel();
  await model.loadAll(db as never);
  t.ok(model.event(1) && model.typeOf('1.1'), 'loaded');
  db.rows = { sports: [SPORT], events: [], markets: [], results: [] };
  db.hold = true;
  const refreshing = model.refresh(db as never, ['event:1', 'market:1.1', 'result:1.1']);
  for (let i = 0; i < 100 && db.held.length === 0; i++) await new Promise((ok) => setImmediate(ok));
  t.equal(db.held.length, 1, 'the market read is under way');
  t.ok(model.event(1), 'the event is still shown while its markets are read');
  t.ok(model.typeOf('1.1'), 'and so is its market');
  db.held[0]();
  const changes = await refreshing;
  t.equal(model.event(1), undefined, 'the event is gone');
  t.equal(model.typeOf('1.1'), undefined, 'with its market');
  t.same(changes.map((c) => `${c.kind}:${c.after ? 'changed' : 'gone'}`), ['market:gone', 'result:gone'], 'subscribers are told the market and its result went');
});

t.test('a refresh whose read fails changes nothing', async (t) => {
  const db = new FakeDb();
  const model = new ReadModel();
  await model.loadAll(db as never);
  db.rows = { sports: [SPORT], events: [], markets: [], results: [] };
  db.query = async (sql: string) => {
    if (sql.includes('FROM events')) return { rows: [] };
    throw new Error('connection lost');
  };
  await t.rejects(model.refresh(db as never, ['event:1', 'market:1.1']), /connection lost/);
  t.ok(model.event(1), 'the event read before the failure is not swapped in alone');
  t.ok(model.typeOf('1.1'));
});
