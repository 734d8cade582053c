/**
 * Postgres failures in the service's words, over fakes of pg's client and pool: an outage is
 * DB_UNAVAILABLE (never a 400 that blames the caller), a lock wait is not an outage, a COMMIT
 * left unanswered is OUTCOME_UNKNOWN, and a client that broke is destroyed, never reused.
 */
import t from 'tap';
import type pg from 'pg';
import { asDatabaseError, inTransaction, isUnavailable, transaction } from '../../src/db/pool.js';
import { ServiceError } from '../../src/errors.js';

const pgError = (code: string, message = 'x') => Object.assign(new Error(message), { code });

t.test('what counts as Postgres unavailable', async (t) => {
  for (const code of ['08006', '57P01', '53300', 'ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT']) t.ok(isUnavailable(pgError(code)), code);
  t.ok(isUnavailable(new Error('Connection terminated unexpectedly')));
  t.ok(isUnavailable(new Error('query read timeout')));
  t.notOk(isUnavailable(pgError('55P03', 'lock timeout')), 'a lock wait: Postgres answered');
  t.notOk(isUnavailable(pgError('23505', 'duplicate key')), 'a statement it refused');
  t.notOk(isUnavailable(null));
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
