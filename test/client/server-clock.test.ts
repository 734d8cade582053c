import t from 'tap';
import { ServerClock } from '../../src/client/server-clock.js';
import { FreshnessBook } from '../../src/client/freshness.js';

/** The client's own judgement of how late what it reads is: the server's clock from its frames, and the markets it then holds `behind`. */

t.test('the offset is the quickest frame\'s: a frame read later than that is late by the difference', async (t) => {
  const c = new ServerClock();
  t.equal(c.lateness(1000, 5000), 0, 'nothing seen: nothing known');
  t.equal(c.now(5000), undefined);
  // The client's clock is 4000 ms ahead of the server's; the link takes 20 ms at its quickest.
  c.observe(1000, 5020);
  c.observe(2000, 6050);
  c.observe(2500, 6520);
  t.equal(c.lateness(3000, 7020), 0, 'read as quickly as ever');
  t.equal(c.lateness(3000, 9520), 2500, 'read 2.5 s later than that');
  t.equal(c.now(10_020), 6000, 'the server\'s time, less the quickest way across');
  c.observe(1, 6600);
  t.equal(c.lateness(3000, 7020), 0, 'an old stamp (a quiet market\'s image) never makes the clock run slow');
});

t.test('a link that got slower for good is followed within two windows', async (t) => {
  const c = new ServerClock();
  c.observe(0, 20);
  c.observe(30_000, 30_020);
  for (let s = 60; s <= 180; s += 30) c.observe(s * 1000, s * 1000 + 520);
  t.equal(c.lateness(200_000, 200_520), 0, 'the old quickest has aged out: 500 ms more is the link now');
});

t.test('late: every market the server holds live is behind until timely again; the server\'s own word wins', async (t) => {
  const f = new FreshnessBook();
  f.apply({ op: 'freshness', mid: '1.3', live: false, why: 'publisher', at: 5 });
  t.same(f.late(['1.1', '1.2', '1.3'], 100), [{ mid: '1.1', live: false, why: 'behind', since: 100 }, { mid: '1.2', live: false, why: 'behind', since: 100 }]);
  t.same(f.late(['1.1'], 200), [], 'told once');
  t.same(f.get('1.3'), { mid: '1.3', live: false, why: 'publisher', since: 5 }, 'its publisher is the server\'s word');
  t.same(f.apply({ op: 'freshness', mid: '1.3', live: true, at: 6 }), { mid: '1.3', live: false, why: 'behind', since: 100 }, 'live by the server, still late here');
  t.same(f.timely(['1.1', '1.2', '1.3']), [{ mid: '1.1', live: true }, { mid: '1.2', live: true }, { mid: '1.3', live: true }]);
  t.same(f.timely(['1.1']), [], 'timely already');
});
