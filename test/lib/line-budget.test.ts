import t from 'tap';
import { LineBudget } from '../../src/lib/line-budget.js';
import { FakeClock } from '../helpers/clock.js';

t.test('at most N lines per interval; the next line let through says how many were held back', async (t) => {
  const clock = new FakeClock();
  const budget = new LineBudget(2, 1000, clock);
  const at = (ms: number) => {
    clock.advance(ms);
    return budget.spend();
  };
  t.same([at(0), at(10), at(10), at(10), at(969)], [0, 0, undefined, undefined, undefined]);
  t.equal(at(1), 3, 'a new interval: three were held back');
  t.equal(at(1), 0, 'and the count starts again');
  t.equal(at(1), undefined, 'until the budget is spent again');
});
