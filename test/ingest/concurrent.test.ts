/**
 * Two publishers writing the same reference rows at once, against the real Postgres: in the same
 * order and in reverse order, every batch succeeds. In every round a third connection holds one of
 * the rows until a publisher has waited for it longer than a statement may run (1 s): a wait is
 * not an outage, and two batches crossing never deadlock. A lock held past PG_LOCK_WAIT_MS is a
 * retryable refusal, nothing changed.
 */
import t from 'tap';
import { postJson, startTestService } from '../helpers/service.js';
import { sqlClient } from '../helpers/db.js';
import { eventually, waitFor } from '../helpers/wait.js';

type Obj = Record<string, unknown>;
type Reply = { status: number; message: string };

// Statements short enough that a lock wait outlasts one, long enough for the read model's reloads on a busy machine.
const svc = await startTestService(t, { DEMO_DATA: 'off', PG_STATEMENT_TIMEOUT_MS: '1000', PG_LOCK_WAIT_MS: '20000' });
const db = await sqlClient(t, svc.databaseUrl);
const ingest = (data: Obj[]) => postJson<Reply>(svc.url, '/api/v1/ingest', { data });

/**
 * A round's rows (each event and its market) and their league are 63 rows to lock: within the 64 a
 * batch locks one by one, in one order whatever its own (src/ingest/write.ts), which is where two
 * crossing batches could deadlock; a larger batch takes one lock for every writer, as the lock
 * table's test below sends.
 */
const EVENTS = 31;
const eid = (i: number) => 8_000_000 + i;
await ingest([{ kind: 'sport', si: 801, na: 'Sport', a: true }, { kind: 'league', li: 80_001, si: 801, na: 'League' }]);

/** A publisher's round: every event renamed and its market's runners named again, `round` in each name. */
function round(n: number, who: string): Obj[] {
  const out: Obj[] = [];
  for (let i = 0; i < EVENTS; i++) {
    out.push({ kind: 'event', eid: eid(i), na: `Event ${i} ${who}${n}`, st: '2030-01-01T00:00:00.000Z', si: 801, li: 80_001 });
    out.push({ kind: 'market', mid: `8.${i}`, eid: eid(i), na: `Match ${who}${n}`, ty: 'match-odd', s: true, go: false, rt: false,
      r: [{ rid: 1, na: `Home ${who}${n}` }, { rid: 2, na: 'Away' }, { rid: 3, na: 'Draw' }] });
  }
  return out;
}

// The rows exist before the rounds, so the held one is there to wait for.
await ingest(round(0, 'setup '));

/** Each item's pair (event then its market) kept together, the pairs in reverse. */
const reversed = (items: Obj[]): Obj[] => items.flatMap((_, k) => (k % 2 ? [] : [items[k], items[k + 1]])).reverse().flatMap((x, k, all) => (k % 2 ? [] : [all[k + 1], x]));

for (const [order, second] of [['the same order', (items: Obj[]) => items], ['reverse order', reversed]] as const) {
  t.test(`two publishers writing the same ${EVENTS * 2} rows at once in ${order} both succeed, round after round`, async (t) => {
    const failed: string[] = [];
    const holder = await sqlClient(t, svc.databaseUrl);
    for (let n = 0; n < 3; n++) {
      await holder.query('BEGIN');
      await holder.query('UPDATE events SET na = na WHERE eid = $1', [eid(EVENTS - 1)]);
      const both = Promise.all([ingest(round(n, 'a')), ingest(second(round(n, 'b')))]);
      await waitFor(async () => (await db.query<{ n: number }>(
        "SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND now() - query_start > interval '1200 milliseconds'")).rows[0].n > 0,
      'a publisher waiting on the held row longer than a statement may run');
      await holder.query('COMMIT');
      const replies = await both;
      for (const [k, r] of replies.entries()) if (r.status !== 200) failed.push(`round ${n} publisher ${k}: ${r.status} ${r.body.message}`);
    }
    t.same(failed, [], 'no batch refused');
    const names = (await db.query<{ na: string }>('SELECT DISTINCT substring(na from \' ([ab]2)$\') AS na FROM events WHERE eid >= $1 AND eid < $2', [eid(0), eid(EVENTS)])).rows;
    t.equal(names.length, 1, 'every event holds one batch\'s names: the batch that committed last, whole');
  });
}

// Each row took a lock of Postgres's lock table, which holds max_locks_per_transaction (64) for
// each connection it may have, shared by all: a batch of 13,130 rows (within every bound a batch
// has) was answered "the database is unavailable", however often it was sent again. The table
// overflows a little past that nominal size (7,808 here; one transaction's advisory locks ran out
// between 13,000 and 14,000 on Postgres 15 and 17), so the batch is twice it. Its nested markets
// have no runners: runners take no lock, only time to write.
t.test('a batch of more rows than Postgres\'s lock table holds is written whole, and a small batch beside it still succeeds', async (t) => {
  const setting = async (name: string) => Number((await db.query(`SELECT current_setting('${name}') AS v`)).rows[0].v);
  const table = (await setting('max_locks_per_transaction')) * ((await setting('max_connections')) + (await setting('max_prepared_transactions')) + 22);
  const perRace = 100;
  const n = Math.ceil((2 * table) / perRace);
  const parents = [{ kind: 'sport', si: 802, na: 'Races', a: true }, { kind: 'league', li: 80_201, si: 802, na: 'Races' },
    { kind: 'event', eid: 8_100_000, na: 'Races', st: '2030-01-01T00:00:00.000Z', si: 802, li: 80_201 }];
  const races = Array.from({ length: n }, (_, i) => ({
    kind: 'market', mid: `8.r${i}`, eid: 8_100_000, na: `Race ${i}`, ty: 'player-race', s: true, go: false, rt: false,
    m: Array.from({ length: perRace }, (_, k) => ({ mid: `8.r${i}.${k}`, s: true, go: false, r: [], if: null })),
  }));
  const data = [...parents, ...races];
  // A database of its own: its thousands of markets are no other test's to load. The small batch
  // waits for the big one's writers' lock: a busy CI machine took 40 s over the big one, past the
  // default PG_LOCK_WAIT_MS (30 s, whose refusal the last test checks), so the wait here is longer.
  const wide = await startTestService(t, { DEMO_DATA: 'off', PG_LOCK_WAIT_MS: '300000', MAX_BODY_BYTES: String(JSON.stringify({ data }).length + 1024) });
  const big = postJson<Reply>(wide.url, '/api/v1/ingest', { data });
  const small = await postJson<Reply>(wide.url, '/api/v1/ingest', { data: [{ kind: 'sport', si: 803, na: 'Beside the big one', a: true }] });
  t.same((await big).body, { status: 1, message: `Ingested ${data.length} items` }, `${n * (perRace + 1) + 3} rows, twice the lock table's ${table}`);
  t.same(small.body, { status: 1, message: 'Ingested 1 item' });
  const wideDb = await sqlClient(t, wide.databaseUrl);
  t.equal((await wideDb.query('SELECT count(*)::int AS n FROM markets WHERE parent_mid IS NOT NULL')).rows[0].n, n * perRace, 'every nested market written');
});

t.test('a row held past PG_LOCK_WAIT_MS: the batch is refused as busy, to send again, nothing changed; then it goes through', async (t) => {
  const short = await startTestService(t, { DEMO_DATA: 'off', PG_STATEMENT_TIMEOUT_MS: '100', PG_LOCK_WAIT_MS: '300' }, svc.databaseUrl);
  const holder = await sqlClient(t, svc.databaseUrl);
  await holder.query('BEGIN');
  await holder.query('UPDATE events SET na = $1 WHERE eid = $2', ['Held', eid(0)]);
  const batch = [{ kind: 'event', eid: eid(0), na: 'Waited' }, { kind: 'event', eid: eid(1), na: 'Waited too' }];
  const refused = await postJson<Reply>(short.url, '/api/v1/ingest', { data: batch });
  t.equal(refused.status, 503);
  t.equal(refused.headers.get('retry-after'), '1');
  t.match(refused.body.message, /^another batch is writing the same rows .*PG_LOCK_WAIT_MS.*; nothing was changed, send it again$/);
  t.notMatch(refused.body.message, /database is unavailable/);
  t.notSame((await db.query('SELECT na FROM events WHERE eid = $1', [eid(1)])).rows, [{ na: 'Waited too' }], 'nothing of the batch was written');
  await holder.query('COMMIT');
  const again = await eventually(() => postJson<Reply>(short.url, '/api/v1/ingest', { data: batch }), (r) => r.status === 200, 10_000);
  t.same(again.body, { status: 1, message: 'Ingested 2 items' });
});
