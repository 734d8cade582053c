/**
 * Wrong API keys throttled as attempts, per address and per key ID presented, on a clock the test
 * moves: past the burst a wrong key is answered 429 with when to retry, the attempts come back at
 * their rate, one address's guesses hold back no other address, and warnings are a line per
 * interval that says how many failures it stands for.
 */
import t from 'tap';
import { FailedKeys } from '../../src/auth/failures.js';
import { createLogger } from '../../src/log.js';
import { FakeClock } from '../helpers/clock.js';

function setup(limits = { burst: 3, perSecond: 1, sources: 100 }) {
  const clock = new FakeClock();
  const lines: Record<string, unknown>[] = [];
  const log = createLogger('warn', false, (l) => lines.push(JSON.parse(l) as Record<string, unknown>));
  return { clock, lines, failed: new FailedKeys(limits, log, clock) };
}

t.test('an address past its burst of wrong keys is answered 429, with Retry-After, until an attempt comes back', async (t) => {
  const { clock, failed } = setup();
  for (let i = 0; i < 3; i++) t.equal(failed.failed('10.0.0.1', undefined, 'unknown key'), undefined, 'the usual 401');
  t.match(failed.failed('10.0.0.1', undefined, 'unknown key'), { code: 'RATE_LIMITED', message: 'too many requests with a wrong API key from this address; retry after 1 s', headers: { 'retry-after': '1' } });
  t.equal(failed.failed('10.0.0.2', undefined, 'unknown key'), undefined, 'another address is not held back');
  clock.advance(1000);
  t.equal(failed.failed('10.0.0.1', undefined, 'unknown key'), undefined, 'a second later, one more attempt');
});

t.test('a key ID guessed from many addresses is throttled as one', async (t) => {
  const { failed } = setup();
  for (let i = 0; i < 3; i++) t.equal(failed.failed(`10.1.0.${i}`, 'k1', 'wrong secret'), undefined);
  t.match(failed.failed('10.1.0.9', 'k1', 'wrong secret'), { message: /for this key ID/ });
  t.equal(failed.failed('10.1.0.9', 'k2', 'wrong secret'), undefined, 'another key ID from that address is not');
});

t.test('a burst of 0 turns the throttle off', async (t) => {
  const { failed } = setup({ burst: 0, perSecond: 1, sources: 100 });
  for (let i = 0; i < 50; i++) t.equal(failed.failed('10.0.0.1', 'k', 'x'), undefined);
});

t.test('one warning line per 10 s, counting the failures it stands for; the key itself never logged', async (t) => {
  const { clock, lines, failed } = setup({ burst: 1000, perSecond: 1000, sources: 100 });
  for (let i = 0; i < 5; i++) failed.failed('10.0.0.1', 'k1', 'wrong secret');
  t.equal(lines.length, 1, 'the first failure warns at once');
  t.match(lines[0], { msg: 'requests with a wrong API key', address: '10.0.0.1', keyId: 'k1', failures: 1 });
  clock.advance(10_000);
  failed.failed('10.0.0.2', undefined, 'unknown key');
  t.equal(lines.length, 2);
  t.match(lines[1], { failures: 5, sinceMs: 10_000 }, 'the four held back and this one');
});
