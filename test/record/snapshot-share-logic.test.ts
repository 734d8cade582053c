/**
 * How record reads share the pool and hold their connection (snapshot.ts), over a fake pool and a
 * clock the test moves: at most `concurrent` reads hold a connection, one more waits its turn for
 * `waitMs` and is then refused BUSY; an answer is one transaction on one connection, given back
 * clean when it succeeds and never reused when it fails; a connection lost mid-answer is the
 * answer's failure, not the process's; a read whose caller left stops, its statement cancelled.
 * test/record/snapshot-share.test.ts and snapshot.test.ts hold the same against a real Postgres.
 */
import t from 'tap';
import { EventEmitter } from 'node:events';
import type pg from 'pg';
import { RecordSnapshots, type RecordDb } from '../../src/record/snapshot.js';
import { ServiceError } from '../../src/errors.js';
import { FakeClock } from '../helpers/clock.js';

/** A pooled connection as pg hands it out: statements, a release, and 'error' events once checked out. */
class FakeClient extends EventEmitter {
  readonly statements: string[] = [];
  released: 'clean' | 'destroyed' | undefined;
  constructor(readonly processID: number) {
    super();
  }
  async query(sql: string): Promise<{ rows: unknown[] }> {
    this.statements.push(sql);
    return { rows: [] };
  }
  release(err?: Error | boolean): void {
    this.released = err ? 'destroyed' : 'clean';
  }
}

class FakePool {
  readonly handed: FakeClient[] = [];
  /** The backends asked to cancel their statement, by pid. */
  readonly cancelled: number[] = [];
  async connect(): Promise<pg.PoolClient> {
    const c = new FakeClient(1000 + this.handed.length);
    this.handed.push(c);
    return c as unknown as pg.PoolClient;
  }
  async query(sql: string, values: unknown[]): Promise<unknown> {
    if (sql === 'SELECT pg_cancel_backend($1)') this.cancelled.push(values[0] as number);
    return { rows: [] };
  }
}

/** An answer that holds its connection until the test lets it go. */
function held(): { answer: (db: RecordDb) => Promise<string>; go: () => void } {
  let go = (): void => undefined;
  const gate = new Promise<void>((ok) => (go = ok));
  return { answer: async () => { await gate; return 'done'; }, go: () => go() };
}

const turn = () => new Promise((ok) => setImmediate(ok));

t.test('at most `concurrent` reads hold a connection; the next waits its turn, and past waitMs is refused BUSY with Retry-After', async (t) => {
  const pool = new FakePool();
  const clock = new FakeClock();
  const snapshots = new RecordSnapshots(pool, { concurrent: 2, waitMs: 5000 }, clock);
  const [a, b, c, d] = [held(), held(), held(), held()];
  const reads = [snapshots.read(a.answer), snapshots.read(b.answer)];
  await turn();
  t.equal(pool.handed.length, 2, 'two reads hold a connection each');
  const third = snapshots.read(c.answer);
  const fourth = snapshots.read(d.answer).then(() => 'answered', (err: ServiceError) => err);
  await turn();
  t.equal(pool.handed.length, 2, 'the third and fourth wait: no connection taken for them');
  a.go();
  await reads[0];
  await turn();
  t.equal(pool.handed.length, 3, 'one read ended: the first waiting takes its turn');
  clock.advance(5000);
  const refused = await fourth;
  t.ok(refused instanceof ServiceError && refused.code === 'BUSY', `the one still waiting after waitMs is refused BUSY (${String(refused)})`);
  t.same((refused as ServiceError).headers, { 'retry-after': '1' }, 'saying when to try again');
  t.equal(pool.handed.length, 3, 'and took no connection');
  b.go();
  c.go();
  t.same(await Promise.all([reads[1], third]), ['done', 'done'], 'the others are answered');
});

t.test('an answer is one read-only repeatable-read transaction on one connection, given back clean', async (t) => {
  const pool = new FakePool();
  const snapshots = new RecordSnapshots(pool);
  const out = await snapshots.read(async (db) => {
    await db.query('SELECT 1');
    await db.query('SELECT 2');
    return 'both';
  });
  t.equal(out, 'both');
  t.same(pool.handed[0].statements, ['BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY', 'SELECT 1', 'SELECT 2', 'COMMIT'], 'its statements inside one snapshot');
  t.equal(pool.handed[0].released, 'clean', 'its connection back to the pool');
  t.equal(pool.handed[0].listenerCount('error'), 0, 'with no listener of the read left on it');
});

t.test('a connection lost mid-answer fails that answer only: the process lives, the connection is not reused', async (t) => {
  const pool = new FakePool();
  const snapshots = new RecordSnapshots(pool);
  const lost = new Error('Connection terminated unexpectedly');
  const read = snapshots.read((db) => new Promise((_, fail) => {
    // As pg does on a cut, from the socket's own event: the client emits 'error' (thrown out of the
    // event, uncaught, were nothing listening), and the statement under way fails.
    const client = db as unknown as FakeClient;
    setImmediate(() => {
      client.emit('error', lost);
      fail(lost);
    });
  }));
  await t.rejects(read, /terminated unexpectedly/, 'the answer fails with why');
  t.equal(pool.handed[0].released, 'destroyed', 'the connection is destroyed, not handed out again');
  t.equal(pool.handed[0].listenerCount('error'), 0, 'and the read\'s listener is off it');
  t.equal(await snapshots.read(async () => 'next'), 'next', 'the next read is answered');
});

t.test('a read whose caller left while it waited leaves the queue: refused ABORTED, the next in line takes the turn', async (t) => {
  const pool = new FakePool();
  const snapshots = new RecordSnapshots(pool, { concurrent: 1, waitMs: 5000 }, new FakeClock());
  const [a, b, c] = [held(), held(), held()];
  const first = snapshots.read(a.answer);
  await turn();
  const leaving = new AbortController();
  const left = snapshots.read(b.answer, leaving.signal).then(() => 'answered', (err: ServiceError) => err);
  const third = snapshots.read(c.answer);
  await turn();
  leaving.abort();
  const refused = await left;
  t.ok(refused instanceof ServiceError && refused.code === 'ABORTED', `refused ABORTED (${String(refused)})`);
  a.go();
  await first;
  await turn();
  t.equal(pool.handed.length, 2, 'the turn went to the read still waiting, and no connection was taken for the one that left');
  c.go();
  t.equal(await third, 'done');
  await t.rejects(snapshots.read(async () => 'late', AbortSignal.abort()), { code: 'ABORTED' }, 'a caller already gone takes no turn at all');
  t.equal(pool.handed.length, 2);
});

t.test('a read whose caller left mid-answer: its statement is cancelled in Postgres, it asks nothing more, and it keeps its turn until the statement ended', async (t) => {
  const pool = new FakePool();
  const snapshots = new RecordSnapshots(pool, { concurrent: 1, waitMs: 5000 }, new FakeClock());
  const leaving = new AbortController();
  let endStatement = (): void => undefined;
  const statementEnded = new Promise<void>((ok) => (endStatement = ok));
  let after: unknown;
  const read = snapshots.read(async (db) => {
    await db.query('SELECT 1');
    // The statement a cancel ends: Postgres answers it with an error once cancelled.
    await statementEnded;
    after = await db.query('SELECT 2').then(() => 'asked', (err: ServiceError) => err.code);
    throw new Error('canceling statement due to user request');
  }, leaving.signal);
  await turn();
  const next = snapshots.read(async () => 'next');
  leaving.abort();
  await turn();
  t.same(pool.cancelled, [1000], 'its backend asked to cancel the statement under way');
  t.equal(pool.handed.length, 1, 'the next read waits: the cancelled one keeps its turn until its statement has ended');
  endStatement();
  await t.rejects(read, { code: 'ABORTED' }, 'the read ends ABORTED');
  t.equal(after, 'ABORTED', 'a statement after the caller left is refused, never sent');
  t.same(pool.handed[0].statements, ['BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY', 'SELECT 1'], 'nothing more reached Postgres');
  t.equal(pool.handed[0].released, 'destroyed', 'its connection (mid-transaction, its statement cancelled) is not reused');
  t.equal(await next, 'next', 'then the next read is answered');
});

t.test('a read whose caller left while its COMMIT was under way: its connection is not given back, where the cancel sent for its backend would end another read\'s statement', async (t) => {
  const pool = new FakePool();
  const snapshots = new RecordSnapshots(pool);
  const leaving = new AbortController();
  let commit = (): void => undefined;
  const committed = new Promise<void>((ok) => (commit = ok));
  const read = snapshots.read(async (db) => {
    // Its COMMIT held until the test lets it answer: the caller leaves while it is under way.
    const client = pool.handed[0];
    const plain = client.query.bind(client);
    client.query = async (sql: string) => {
      if (sql === 'COMMIT') await committed;
      return plain(sql);
    };
    await db.query('SELECT 1');
    return 'answered';
  }, leaving.signal);
  await turn();
  t.same(pool.handed[0].statements, ['BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY', 'SELECT 1'], 'its COMMIT under way');
  leaving.abort();
  commit();
  await t.rejects(read, { code: 'ABORTED' }, 'the read ends ABORTED');
  t.same(pool.cancelled, [1000], 'a cancel was sent for its backend, landing whenever it lands');
  t.equal(pool.handed[0].released, 'destroyed', 'so its connection is not handed to another read (before: given back clean)');
});

t.test('a read whose caller left while a connection was being made for it gives the connection back clean, having asked nothing', async (t) => {
  const pool = new FakePool();
  let connected = (): void => undefined;
  const connecting = new Promise<void>((ok) => (connected = ok));
  const connect = pool.connect.bind(pool);
  pool.connect = async () => {
    await connecting;
    return connect();
  };
  const leaving = new AbortController();
  const read = new RecordSnapshots(pool).read(async () => 'answered', leaving.signal);
  leaving.abort();
  connected();
  await t.rejects(read, { code: 'ABORTED' });
  t.same(pool.handed[0].statements, [], 'nothing asked on it');
  t.equal(pool.handed[0].released, 'clean', 'back to the pool, not destroyed');
  t.same(pool.cancelled, [], 'and nothing cancelled');
});
