/**
 * How much one answer of a socket's record costs. An event moves every market it names: a
 * conflated socket of 2,000 markets (WS_MAX_MARKETS) that falls behind and catches up 20 times has
 * 41 events and 40,000 spans. Its answers take a handful of statements on the one pooled
 * connection they hold (a fake snapshot counts them), not one a span or several a market; and a
 * socket whose events name more markets than an answer reads is refused, past the cap weighed in
 * Postgres and never sent (a real one, the notes written by the recorder).
 */
import t from 'tap';
import { freshDatabase } from '../helpers/db.js';
import { testRecord } from '../helpers/record.js';
import { waitFor } from '../helpers/wait.js';
import { SocketRecord } from '../../src/record/sockets.js';
import { RecordSnapshots, type RecordDb } from '../../src/record/snapshot.js';

const MARKETS = 2000;
const ROUNDS = 20;
const mids = Array.from({ length: MARKETS }, (_, i) => `1.${i + 1}`);
const how = { variant: 'j3.500', depth: 3, conflate: 500, delta: false };

type Event = { at: number; op: string; body: Record<string, unknown>; n: number };

/** A 2,000-market conflated socket that fell behind and caught up `rounds` times: 2 + 2 x rounds - 1 events. */
function ledger(rounds = ROUNDS): Event[] {
  const out: Event[] = [
    { at: 1, op: 'open', body: { key: 'k', client: 'c', address: 'a', format: 'json' }, n: 1 },
    { at: 2, op: 'take', body: { ...how, seqs: mids.map((m) => [m, null, null]) }, n: 2 },
  ];
  for (let i = 0; i < rounds; i++) {
    const at = 3 + 2 * i;
    out.push({ at, op: 'join', body: { seqs: mids.map((m) => [m, 'e', at, true]) }, n: at });
    if (i < rounds - 1) out.push({ at: at + 1, op: 'owe', body: { seqs: mids.map((m) => [m, 'e', at + 1]) }, n: at + 1 });
  }
  return out;
}

/** Answers the ledger's read with `events`, every other statement with no rows, and counts them. */
function fake(events: Event[]) {
  const seen = { statements: 0 };
  const db: RecordDb = {
    query: (async (text: string) => {
      seen.statements++;
      return { rows: /FROM record_ledger WHERE conn/.test(text) ? events : [] };
    }) as unknown as RecordDb['query'],
  };
  return { db, seen };
}

t.test('a socket\'s ledger answer: statements bounded, not one a span', async (t) => {
  const events = ledger();
  const { db, seen } = fake(events);
  const answer = await new SocketRecord(db).ledger('pabc.1');
  const spans = Object.values(answer.markets).reduce((n, m) => n + m.spans.length, 0);
  t.equal(spans, ROUNDS * MARKETS, `${events.length} events, ${spans} spans`);
  t.ok(seen.statements <= 5, `statements for ${events.length} events: ${seen.statements}`);
});

t.test('a socket\'s screen at an instant: statements bounded, not several a market', async (t) => {
  const { db, seen } = fake(ledger());
  const screen = await new SocketRecord(db).screen('pabc.1', 1000);
  t.equal(screen.markets.length, MARKETS);
  t.ok(seen.statements <= 10, `statements for a screen of ${MARKETS} markets: ${seen.statements}`);
});

t.test('in Postgres: a 2,000-market socket\'s life is answered; past the cap, refused, and what is past it never sent', async (t) => {
  const url = await freshDatabase(t);
  const { log, pool } = await testRecord(t, url, { batch: 20, writeTimeoutMs: 30_000 });
  const T = Date.now() - 60_000;
  // pa.1: 41 events, 80,041 mentions (one an event, one a market it names); pa.2: 26 rounds, 53 events, 104,053, past the 100,000 an answer reads at its 51st.
  const lives = [ledger(), ledger(26)];
  let n = 0;
  lives.forEach((events, i) => events.forEach((e) => log.append({ kind: 'note', note: { topic: 'ledger', src: 'pa', n: ++n, at: T + e.at, body: { conn: `pa.${i + 1}`, op: e.op, ...e.body } } })));
  const total = lives[0].length + lives[1].length;
  await waitFor(async () => (await pool.query('SELECT count(*)::int AS c FROM record_ledger')).rows[0].c === total, 'the notes recorded', 60_000);
  const snapshots = new RecordSnapshots(pool);
  const seen = { statements: 0, rows: 0, bodies: 0 };
  const counted = (db: RecordDb): RecordDb => ({
    query: (async (...args: unknown[]) => {
      seen.statements++;
      const r = await (db.query as (...a: unknown[]) => Promise<{ rows: { body?: unknown }[] }>)(...args);
      if (/FROM record_ledger WHERE conn/.test(String(args[0]))) {
        seen.rows += r.rows.length;
        seen.bodies += r.rows.filter((x) => x.body).length;
      }
      return r;
    }) as RecordDb['query'],
  });
  const answer = await snapshots.read((db) => new SocketRecord(counted(db)).ledger('pa.1'));
  t.equal(Object.values(answer.markets).reduce((k, m) => k + m.spans.length, 0), ROUNDS * MARKETS, 'its 40,000 spans');
  t.ok(seen.statements <= 5, `in ${seen.statements} statements`);
  const refused = (p: Promise<unknown>, hint: RegExp) => t.rejects(p, { code: 'LIMIT', message: new RegExp(`connection pa.2 has more than 100000 market mentions.*; ${hint.source}`) });
  Object.assign(seen, { statements: 0, rows: 0, bodies: 0 });
  await refused(snapshots.read((db) => new SocketRecord(counted(db)).ledger('pa.2')), /ask for its screen at an instant/);
  t.same([seen.statements, seen.rows, seen.bodies], [1, 51, 50], 'one statement, the 50 events within the cap and the first past it without its body');
  await refused(snapshots.read((db) => new SocketRecord(db).screen('pa.2', T + 100)), /ask for an earlier instant/);
  const earlier = await snapshots.read((db) => new SocketRecord(db).screen('pa.2', T + 40));
  t.equal(earlier.markets.length, MARKETS, 'its screen at an earlier instant is answered');
});

t.test('conflated sends past the answer\'s cap: listed up to it, the spans from the one it stopped in marked cut', async (t) => {
  const events = ledger(2);
  // 60,000 sends to each of the first two spans (1.1's), none to the rest: the cap falls in the second.
  const sends = [1, 2].flatMap((i) => Array.from({ length: 60_000 }, (_, k) => ({ i, epoch: 'e', seq: 10 + k })));
  const db: RecordDb = {
    query: (async (text: string, params: unknown[]) => {
      if (/FROM record_ledger WHERE conn/.test(text)) return { rows: events };
      return { rows: /FROM record_sent/.test(text) ? sends.slice(0, Number(params.at(-1))) : [] };
    }) as unknown as RecordDb['query'],
  };
  const answer = await new SocketRecord(db).ledger('pabc.1');
  const [first, second] = answer.markets['1.1'].spans;
  t.same([first.seqs!.length, first.cut, first.to], [1 + 60_000, undefined, 4], 'the first listed whole, ending where the ledger said');
  t.same([second.seqs!.length, second.cut], [1 + 40_000, true], 'the second cut at the cap');
  t.equal(answer.markets['1.2'].spans[0].cut, true, 'and the spans after it');
  t.equal(Object.values(answer.markets).reduce((n, m) => n + m.spans.reduce((k, s) => k + s.seqs!.length - 1, 0), 0), 100_000, '100,000 sends listed');
});
