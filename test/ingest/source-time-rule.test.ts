/**
 * Source times taken on no one's word, on a clock the test sets: too far ahead refused naming both
 * times, older than the newest its publisher sent refused as out of order, old published as late;
 * a replay judged by its order alone. (Over real sockets: ingest/source-time.test.ts.)
 */
import t from 'tap';
import { SourceTime } from '../../src/ingest/source-time.js';
import { FakeClock } from '../helpers/clock.js';

t.test('the rule, on a clock the test sets', async (t) => {
  const clock = new FakeClock(1_800_000_000_000);
  let now = clock.now();
  const times = new SourceTime({ maxSkewMs: 5000, lateMs: 5000, clock });
  t.same(times.judge(now, undefined, false), { late: false }, 'now');
  t.same(times.judge(now + 5000, undefined, false), { late: false }, 'ahead by the skew allowed');
  t.match(times.judge(now + 5001, undefined, false), { error: /ts 1800000005001 \(2027-01-15T08:00:05.001Z\) is 5001 ms ahead of the server's clock 1800000000000 \(2027-01-15T08:00:00.000Z\); at most 5000 ms/ });
  t.match(times.judge(1e300, undefined, false), { error: /^ts 1e\+300 is 1e\+300 ms ahead/ }, 'a time no date holds is named as it came');
  t.same(times.judge(now - 5000, undefined, false), { late: false }, 'as old as allowed');
  t.same(times.judge(now - 5001, undefined, false), { late: true }, 'older: late');
  t.same(times.judge(0, undefined, false), { late: true }, 'zero: late');
  t.match(times.judge(now - 1, now, false), { error: /older than 1800000000000 .* out of order/ });
  t.same(times.judge(now, now, false), { late: false }, 'the same time as the newest is in order');
  t.match(times.judge(5, 6, true), { error: /out of order/ }, 'a replay keeps its order');
  t.same(times.judge(5, 5, true), { late: false }, 'and its own times: neither late nor ahead');
  t.same(times.judge(now + 86_400_000, undefined, true), { late: false });
  clock.advance(10_000);
  now = clock.now();
  t.same(times.judge(now - 5001, undefined, false), { late: true }, 'judged by the clock as it is at each image');
});
