/**
 * How much one answer of a socket's record costs (unit, over a fake snapshot that counts its
 * statements). A socket's answer reads at most 20,000 ledger events, but an event moves every
 * market it names: a conflated socket of 2,000 markets (WS_MAX_MARKETS) that falls behind and
 * catches up 20 times has 41 events and 40,000 spans, each a statement on the one pooled
 * connection the answer holds. Pinned as todos: the bound is on events, not on the work.
 */
import t from 'tap';
import { SocketRecord } from '../../src/record/sockets.js';
import type { RecordDb } from '../../src/record/snapshot.js';

const MARKETS = 2000;
const ROUNDS = 20;
const mids = Array.from({ length: MARKETS }, (_, i) => `1.${i + 1}`);
const how = { variant: 'j3.500', depth: 3, conflate: 500, delta: false };

type Event = { at: number; op: string; body: Record<string, unknown>; n: number };

function ledger(): Event[] {
  const out: Event[] = [
    { at: 1, op: 'open', body: { key: 'k', client: 'c', address: 'a', format: 'json' }, n: 1 },
    { at: 2, op: 'take', body: { ...how, seqs: mids.map((m) => [m, null, null]) }, n: 2 },
  ];
  for (let i = 0; i < ROUNDS; i++) {
    const at = 3 + 2 * i;
    out.push({ at, op: 'join', body: { seqs: mids.map((m) => [m, 'e', at, true]) }, n: at });
    if (i < ROUNDS - 1) out.push({ at: at + 1, op: 'owe', body: { seqs: mids.map((m) => [m, 'e', at + 1]) }, n: at + 1 });
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

t.test('a socket\'s ledger answer: statements bounded, not one a span', { todo: 'one statement per conflated span: 40,000 for 40 events' }, async (t) => {
  const events = ledger();
  const { db, seen } = fake(events);
  const answer = await new SocketRecord(db).ledger('pabc.1');
  const spans = Object.values(answer.markets).reduce((n, m) => n + m.spans.length, 0);
  t.equal(spans, ROUNDS * MARKETS, `${events.length} events, ${spans} spans`);
  t.ok(seen.statements <= 100, `statements for ${events.length} events: ${seen.statements}`);
});

t.test('a socket\'s screen at an instant: statements bounded, not several a market', { todo: 'four statements a market with an empty record, up to eight with changes to replay, one after another: 8,001 for 2,000 markets' }, async (t) => {
  const { db, seen } = fake(ledger());
  const screen = await new SocketRecord(db).screen('pabc.1', 1000);
  t.equal(screen.markets.length, MARKETS);
  t.ok(seen.statements <= 100, `statements for a screen of ${MARKETS} markets: ${seen.statements}`);
});
