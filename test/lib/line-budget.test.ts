import t from 'tap';
import { LineBudget } from '../../src/lib/line-budget.js';

t.test('at most N lines per interval; the next line let through says how many were held back', async (t) => {
  const budget = new LineBudget(2, 1000);
  t.same([budget.take(0), budget.take(10), budget.take(20), budget.take(30), budget.take(999)], [0, 0, undefined, undefined, undefined]);
  t.equal(budget.take(1000), 3, 'a new interval: three were held back');
  t.equal(budget.take(1001), 0, 'and the count starts again');
  t.equal(budget.take(1002), undefined, 'until the budget is spent again');
});
