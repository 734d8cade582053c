/**
 * The rate limits every REST key, socket, handshake and wrong key is held to, over a clock the test
 * moves: what they allow depends on the time that passed, never on how fast the machine is.
 */
import t from 'tap';
import { BucketMap } from '../../src/lib/bucket-map.js';
import { TokenBucket } from '../../src/lib/token-bucket.js';
import { FakeClock } from '../helpers/clock.js';

const spend = (b: TokenBucket, n: number) => Array.from({ length: n }, () => b.spend()).filter(Boolean).length;

t.test('a bucket allows its burst at once, then refills at its rate, never past its burst', async (t) => {
  const clock = new FakeClock();
  const b = new TokenBucket(5, clock);
  t.equal(spend(b, 12), 5, 'a second\'s allowance at once, the rest refused');
  t.notOk(b.has());
  t.equal(b.retryAfterS(), 1, 'Retry-After in whole seconds, at least one');
  clock.advance(199);
  t.notOk(b.spend(), 'a token takes a fifth of a second to come back');
  clock.advance(1);
  t.ok(b.spend());
  clock.advance(60_000);
  t.ok(b.full(), 'a minute later, full');
  t.equal(spend(b, 12), 5, 'and never more than the burst');
});

t.test('a burst of its own; a cost of several tokens; a slow rate says how long to wait', async (t) => {
  const clock = new FakeClock();
  const bytes = new TokenBucket(1000, clock, 3000);
  t.ok(bytes.spend(2500));
  t.notOk(bytes.spend(600), 'a cost past what is left is refused whole');
  t.ok(bytes.spend(500));
  clock.advance(1000);
  t.ok(bytes.spend(1000), 'a second brings back a second\'s worth');
  const slow = new TokenBucket(0.1, clock, 1);
  t.ok(slow.spend());
  t.equal(slow.retryAfterS(), 10, 'one token in ten seconds');
  clock.advance(4000);
  t.equal(slow.retryAfterS(), 6, 'less as time passes');
});

t.test('a bucket per name, bounded: full buckets go first, then the oldest eighth', async (t) => {
  const clock = new FakeClock();
  const map = new BucketMap(1, 8, clock);
  for (let i = 0; i < 8; i++) t.equal(map.spend(`n${i}`), undefined, 'a new name has its allowance');
  t.type(map.spend('n0'), TokenBucket, 'a spent name is refused, with its bucket for Retry-After');
  t.equal(map.size, 8);
  t.equal(map.spend('n8'), undefined, 'a ninth name while all are spending: the oldest goes');
  t.equal(map.size, 8);
  t.equal(map.spend('n0'), undefined, 'the name forgotten gets a fresh allowance: a bounded map has to allow it');
  clock.advance(1000);
  map.spend('x');
  t.equal(map.size, 1, 'once every bucket refilled, all go at the next new name: full is the same as new');
});
