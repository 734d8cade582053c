/**
 * What the exchange's messages may be before the adapters translate them: a recording's line or
 * the stream's, checked on no one's word. A message that carries no market data is skipped by
 * its op, one that cannot be used says why, and each market change names the key at fault; the
 * live stream's lines are parsed the same way, an unknown op ignored rather than the stream dropped.
 */
import t from 'tap';
import { changeMid, checkChange, checkMessage, LIMITS } from '../../src/exchange/check.js';
import { parseLine } from '../../src/exchange/live/protocol.js';

t.test('a message: skipped by its op, refused with why, or its header checked', async (t) => {
  t.same(checkMessage({ op: 'ocm', pt: 1 }), { skip: 'ocm' }, 'order changes carry no market data');
  t.same(checkMessage({ op: 'mcm', id: 2, status: 503 }), { message: { op: 'mcm', id: 2, status: 503, mc: [] } }, 'a bare status message needs no time');
  t.match(checkMessage('text'), { error: 'must be an object with an op' });
  t.match(checkMessage({ op: 'mcm', mc: [{}] }), { error: /pt must be the publish time/ });
  t.match(checkMessage({ op: 'mcm', pt: 1, mc: {} }), { error: /mc must be an array/ });
  t.match(checkMessage({ op: 'mcm', pt: 1, mc: Array.from({ length: LIMITS.marketChanges + 1 }, () => ({})) }), { error: new RegExp(`at most ${LIMITS.marketChanges}`) });
  t.match(checkMessage({ op: 'mcm', pt: 1, status: 'late', mc: [] }), { error: /status must be a number or null/ });
});

t.test('a market change: the first problem, naming its key; the market it names even when broken', async (t) => {
  t.equal(checkChange({ id: '1.2', rc: [] }, 'mc[0]'), undefined);
  t.equal(checkChange('x', 'mc[0]'), 'mc[0] must be an object');
  t.equal(checkChange({ id: 'no spaces please' }, 'mc[1]'), 'mc[1].id must be a market ID');
  t.equal(checkChange({ id: '1.2', img: 'yes' }, 'mc[0]'), 'mc[0].img must be true or false');
  t.equal(checkChange({ id: '1.2', tv: '5' }, 'mc[0]'), 'mc[0].tv must be a number');
  t.match(checkChange({ id: '1.2', rc: {} }, 'mc[0]'), /^mc\[0\]\.rc must be an array of at most/);
  t.equal(checkChange({ id: '1.2', rc: [{ id: 1, atb: [[0, 90]], atl: [[0, 110]], batb: [[2, 0, 0]] }] }, 'mc[0]'), undefined, 'a line of 0 runs (a ball\'s), and a removal by position');
  t.equal(checkChange({ id: '1.2', rc: [{ id: 1, atb: [[-1, 90]] }] }, 'mc[0]'), 'mc[0].rc[0].atb[0] must have a size of 0 or more, and a price of 0 or more when the size is not 0');
  t.equal(changeMid({ id: '1.2', rc: 'garbage' }), '1.2', 'a bad change of a known market makes that market unreliable');
  t.equal(changeMid({ id: 7 }), undefined);
});

t.test('the live stream\'s lines: an unknown op ignored, anything unreadable a stream error saying what', async (t) => {
  t.same(parseLine('{"op":"mcm","id":2,"mc":[]}'), { op: 'mcm', id: 2, mc: [] });
  t.equal(parseLine('{"op":"rcm","id":2}'), undefined, 'race data, not for us: ignored');
  t.throws(() => parseLine('{"op":'), { code: 'BAD_JSON' });
  t.throws(() => parseLine('[1]'), { code: 'BAD_MESSAGE', message: /not a JSON object/ });
  t.throws(() => parseLine('{"id":1}'), { message: /without a string "op"/ });
  t.throws(() => parseLine('{"op":"mcm","mc":{}}'), { message: /whose "mc" is not an array/ });
  t.throws(() => parseLine(`{"op":${'"x'.repeat(100)}`), { message: /\.\.\. \(\d+ characters\)$/ }, 'a long line shown cut, with its length');
});
