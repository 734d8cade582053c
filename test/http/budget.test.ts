/**
 * What one API key's `/ws` messages may cost, all its sockets together, over a clock the test
 * moves: the socket's bucket, the key's messages and bytes, the cooldown after a socket is closed
 * for sending on while refused, and a key's entry kept only while it means something. (Over real
 * sockets: http/ws.test.ts; what a flood costs a bystander: bench/flood.ts.)
 */
import t from 'tap';
import { Budgets, type BudgetLimits } from '../../src/http/budget.js';
import { FakeClock } from '../helpers/clock.js';

const LIMITS: BudgetLimits = { perSocket: 5, keyMessages: 8, keyBytes: 1000, perKey: true };

function setup(limits: Partial<BudgetLimits> = {}) {
  const clock = new FakeClock();
  const held = new Set<string>();
  const budgets = new Budgets({ ...LIMITS, ...limits }, { holds: (k) => held.has(k) }, clock);
  return { clock, held, budgets };
}

t.test('a socket spends its own bucket first; a refusal says which limit and at what rate', async (t) => {
  const { budgets, clock } = setup();
  const s = budgets.opened('k');
  for (let i = 0; i < 5; i++) t.equal(budgets.spend('k', s, 10), undefined);
  t.match(budgets.spend('k', s, 10), { scope: 'socket', err: { message: 'rate limit: at most 5 messages per second per socket' } });
  clock.advance(200);
  t.equal(budgets.spend('k', s, 10), undefined, 'a fifth of a second later, one more');
});

t.test('the key\'s messages are shared by its sockets: a new socket gets no more', async (t) => {
  const { budgets } = setup();
  const a = budgets.opened('k');
  const b = budgets.opened('k');
  for (let i = 0; i < 5; i++) t.equal(budgets.spend('k', a, 1), undefined);
  for (let i = 0; i < 3; i++) t.equal(budgets.spend('k', b, 1), undefined);
  t.match(budgets.spend('k', b, 1), { scope: 'key', err: { message: 'rate limit: at most 8 messages per second per API key, all its sockets together' } });
  const c = budgets.opened('k');
  t.match(budgets.spend('k', c, 1), { scope: 'key' }, 'a fresh socket of the key is refused too');
  t.equal(budgets.spend('other', budgets.opened('other'), 1), undefined, 'another key is not held back');
});

t.test('the key\'s bytes: a message past what is left is refused, then allowed as the bytes come back', async (t) => {
  const { budgets, clock } = setup();
  const s = budgets.opened('k');
  t.equal(budgets.spend('k', s, 900), undefined);
  t.match(budgets.spend('k', s, 200), { scope: 'key', err: { message: /1000 bytes per second per API key/ } });
  clock.advance(100);
  t.equal(budgets.spend('k', s, 200), undefined, '100 ms brings back 100 bytes');
});

t.test('a socket closed for abuse cools its key down for 10 s: new sockets are refused with Retry-After', async (t) => {
  const { budgets, clock } = setup();
  budgets.opened('k');
  t.equal(budgets.refuseOpen('k'), undefined);
  budgets.abused('k');
  t.match(budgets.refuseOpen('k'), { code: 'RATE_LIMITED', headers: { 'retry-after': '10' } });
  clock.advance(9_500);
  t.match(budgets.refuseOpen('k'), { headers: { 'retry-after': '1' } }, 'what is left, rounded up');
  clock.advance(500);
  t.equal(budgets.refuseOpen('k'), undefined, 'then the key may open sockets again');
  t.equal(budgets.refuseOpen('other'), undefined, 'no other key was held back');
});

t.test('a key\'s entry goes with its last socket only when full: closing and reopening does not refill it', async (t) => {
  const { budgets, clock, held } = setup();
  held.add('k');
  const s = budgets.opened('k');
  for (let i = 0; i < 5; i++) budgets.spend('k', s, 1);
  held.delete('k');
  budgets.closed('k');
  const again = budgets.opened('k');
  for (let i = 0; i < 3; i++) t.equal(budgets.spend('k', again, 1), undefined);
  t.match(budgets.spend('k', again, 1), { scope: 'key' }, 'the key\'s spending outlived its socket');
  clock.advance(1000);
  t.equal(budgets.spend('k', again, 1), undefined, 'a second later the key\'s budget is whole again');
});

t.test('without keys (AUTH=off) only the socket\'s own bucket counts', async (t) => {
  const { budgets } = setup({ perKey: false });
  const sockets = Array.from({ length: 4 }, () => budgets.opened('public'));
  for (const s of sockets) for (let i = 0; i < 5; i++) t.equal(budgets.spend('public', s, 999), undefined);
  t.match(budgets.spend('public', sockets[0], 1), { scope: 'socket' });
});
