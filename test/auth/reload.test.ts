import t from 'tap';
import { Auth } from '../../src/auth/auth.js';
import { systemClock } from '../../src/lib/clock.js';
import { retry } from '../../src/lib/retry.js';
import { createLogger } from '../../src/log.js';

/**
 * A key reload retries with backoff while Postgres fails, until it works: a revoked key must never
 * keep working because Postgres blinked. Stopped (the service shutting down, its pool closing),
 * it gives up at once and leaves no timer behind, so the process can end.
 */
const log = createLogger('error', false, () => undefined);

/** A database that fails every query, counting them. */
class DownDatabase {
  queries = 0;
  query(): Promise<never> {
    this.queries++;
    return Promise.reject(new Error('Cannot use a pool after calling end on the pool'));
  }
}

const until = async (ok: () => boolean, what: string) => {
  for (const end = Date.now() + 5_000; !ok();) {
    if (Date.now() > end) throw new Error(`not within 5 s: ${what}`);
    await new Promise((r) => setImmediate(r));
  }
};

t.test('a reload retrying while Postgres fails gives up when stopped: false, at once, no timer left', async (t) => {
  const auth = new Auth(true, 0, {} as never, { revoked: () => undefined }, {} as never, systemClock);
  const db = new DownDatabase();
  const reloading = auth.refresh(db as never, ['k1'], log);
  const timers = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
  await until(() => timers() >= 1, 'the first attempt failed and its backoff began');
  t.equal(db.queries, 1, 'one attempt, then a wait');
  auth.stop();
  await until(() => timers() === 0, 'the backoff\'s timer cleared at the stop, not left to run out');
  t.equal(await reloading, false, 'the reload says the keys are not held');
  t.equal(db.queries, 1, 'given up without another attempt');
  const queries = db.queries;
  t.equal(await auth.refresh(db as never, ['k2'], log), false, 'stopped, a new reload starts nothing');
  t.equal(db.queries, queries);
});

t.test('retry with a signal: an abort ends the wait under way and the last error is thrown', async (t) => {
  const stop = new AbortController();
  let tries = 0;
  const trying = retry(() => Promise.reject(new Error(`try ${++tries}`)), { minMs: 60_000, maxMs: 60_000, signal: stop.signal });
  await until(() => tries === 1, 'the first try');
  stop.abort();
  await t.rejects(trying, { message: 'try 1' });
  t.equal(tries, 1, 'nothing tried after the abort');
});
