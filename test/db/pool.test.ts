/**
 * Postgres failures in the service's words, over fakes of pg's client and pool: an outage is
 * DB_UNAVAILABLE (never a 400 that blames the caller), a lock wait is not an outage, a COMMIT
 * left unanswered is OUTCOME_UNKNOWN, a client that broke is destroyed, never reused, and a start
 * step waits out a Postgres restarting.
 */
import t from 'tap';
import type pg from 'pg';
import { asDatabaseError, inTransaction, isRefusedData, isUnavailable, transaction, UntilReachable } from '../../src/db/pool.js';
import type { Logger } from '../../src/log.js';
import { ServiceError } from '../../src/errors.js';

const pgError = (code: string, message = 'x') => Object.assign(new Error(message), { code });

t.test('what counts as Postgres unavailable', async (t) => {
  for (const code of ['08006', '57P01', '53300', 'ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT']) t.ok(isUnavailable(pgError(code)), code);
  t.ok(isUnavailable(new Error('Connection terminated unexpectedly')));
  t.ok(isUnavailable(new Error('query read timeout')));
  t.notOk(isUnavailable(pgError('55P03', 'lock timeout')), 'a lock wait: Postgres answered');
  t.notOk(isUnavailable(pgError('23505', 'duplicate key')), 'a statement it refused');
  t.notOk(isUnavailable(null));
  for (const code of ['22P05', '23514']) t.ok(isRefusedData(pgError(code)), `${code}: the rows themselves refused`);
  for (const code of ['57P01', 'ECONNREFUSED', '55P03']) t.notOk(isRefusedData(pgError(code)), `${code}: not the rows`);
  t.match(asDatabaseError(pgError('57P01')), { code: 'DB_UNAVAILABLE' });
  const refused = pgError('23505');
  t.equal(asDatabaseError(refused), refused, 'anything else passes as it is');
  const own = new ServiceError('BAD_BODY', 'x');
  t.equal(asDatabaseError(own), own);
});

/** A client recording its queries; COMMIT answers as told. */
function fakeClient(commit: () => void = () => undefined) {
  const queries: string[] = [];
  const client = {
    queries,
    released: [] as unknown[],
    on() {},
    off() {},
    release(broken: unknown) {
      this.released.push(broken);
    },
    async query(sql: string) {
      queries.push(sql);
      if (sql === 'COMMIT') commit();
      return { rows: [] };
    },
  };
  return client;
}

t.test('a transaction: BEGIN, the work, COMMIT; ROLLBACK when the work fails; OUTCOME_UNKNOWN when COMMIT goes unanswered', async (t) => {
  const ok = fakeClient();
  t.equal(await transaction(ok as unknown as pg.ClientBase, async () => 7), 7);
  t.same(ok.queries, ['BEGIN', 'COMMIT']);
  const failing = fakeClient();
  await t.rejects(transaction(failing as unknown as pg.ClientBase, async () => { throw new Error('work failed'); }), /work failed/);
  t.same(failing.queries, ['BEGIN', 'ROLLBACK']);
  const lost = fakeClient(() => { throw pgError('08006', 'connection lost'); });
  await t.rejects(transaction(lost as unknown as pg.ClientBase, async () => 1), { code: 'OUTCOME_UNKNOWN', message: /may or may not have been applied/ });
});

t.test('a client that broke is destroyed, not handed back for reuse', async (t) => {
  const client = fakeClient(() => { throw pgError('08006', 'connection lost'); });
  const pool = { connect: async () => client } as unknown as pg.Pool;
  await t.rejects(inTransaction(pool, async () => 1), { code: 'OUTCOME_UNKNOWN' });
  t.equal(client.released.length, 1);
  t.ok(client.released[0], 'released as broken: the pool destroys it');
  const fine = fakeClient();
  await inTransaction({ connect: async () => fine } as unknown as pg.Pool, async () => 1);
  t.same(fine.released, [false], 'a healthy one goes back to the pool');
});

t.test('a start step is tried again while Postgres is unreachable, failed at once on anything else, and ended by a stop', async (t) => {
  const quick = { attempts: 5, minMs: 1, maxMs: 2 };
  const warned: unknown[] = [];
  const log = { warn: (_msg: string, fields: unknown) => void warned.push(fields) } as unknown as Logger;
  const step = (fail: (n: number) => Error | undefined) => {
    let n = 0;
    return { name: 'migrations', calls: () => n, start: async () => { const err = fail(++n); if (err) throw err; }, stop: () => undefined };
  };
  // An embedded postmaster that died after answering once: refused twice while its keeper restarts it.
  const restarting = step((n) => (n <= 2 ? pgError('ECONNREFUSED', 'connect ECONNREFUSED 127.0.0.1:5433') : undefined));
  await new UntilReachable(restarting, log, quick).start();
  t.equal(restarting.calls(), 3, 'started on the third try');
  t.match(warned, [{ step: 'migrations', attempt: 1 }, { step: 'migrations', attempt: 2 }], 'each try again logged with its step');
  const broken = step(() => pgError('42P01', 'relation "x" does not exist'));
  await t.rejects(new UntilReachable(broken, log, quick).start(), /relation "x"/, 'a statement Postgres refused fails the start');
  t.equal(broken.calls(), 1, 'at once');
  const gone = step(() => pgError('ECONNREFUSED'));
  await t.rejects(new UntilReachable(gone, log, quick).start(), { code: 'ECONNREFUSED' }, 'unreachable past its tries: the start fails');
  t.equal(gone.calls(), 5);
  const waiting = new UntilReachable(step(() => pgError('ECONNREFUSED')), log, { attempts: 100, minMs: 60_000, maxMs: 60_000 });
  const started = waiting.start();
  await waiting.stop();
  await t.rejects(started, { code: 'ECONNREFUSED' }, 'a stop ends the wait at once');
});
