/**
 * The TypeScript client's requests over a connection that comes and goes, without a socket: kept
 * subscribes replayed on every connection with what the client holds, one-offs waiting for one,
 * each ack settling its own request by id, a refused subscribe not asked again, and everyone
 * waiting told when the client stops.
 */
import t from 'tap';
import { Requests, RefusedError, subscribeOf } from '../../src/client/subscribes.js';
import type { AckMessage, ClientMessage } from '../../src/odds/messages.js';

const ack = (id: number, status: 0 | 1 = 1): AckMessage => ({ op: 'ack', id, status, message: status ? 'ok' : 'no' });

t.test('a subscribe is sent at once when connected, kept, and replayed on the next connection with what the client holds', async (t) => {
  const r = new Requests();
  const sent: ClientMessage[] = [];
  const done = r.subscribe({ mids: ['1.1'], depth: 3 }, (m) => sent.push(m));
  t.same(sent, [{ op: 'subscribe', id: 1, mids: ['1.1'], depth: 3 }]);
  t.equal(r.answers(1)?.mids?.[0], '1.1');
  t.ok(r.settle(ack(1)));
  t.match(await done, { status: 1 });
  t.ok(r.names('1.1'));
  r.lost();
  const again: ClientMessage[] = [];
  r.replay((m) => again.push(m), () => ({ epoch: 'e', seqs: { '1.1': 7 } }));
  t.same(again, [{ op: 'subscribe', id: 2, mids: ['1.1'], depth: 3, since: { epoch: 'e', seqs: { '1.1': 7 } } }]);
});

t.test('one-offs wait for a connection; one unanswered when it is lost goes again on the next', async (t) => {
  const r = new Requests();
  const answer = r.oneOff({ op: 'unsubscribe', mids: ['1.2'] }, undefined);
  const first: ClientMessage[] = [];
  r.replay((m) => first.push(m), () => undefined);
  t.same(first, [{ op: 'unsubscribe', mids: ['1.2'], id: 1 }]);
  r.lost();
  const second: ClientMessage[] = [];
  r.replay((m) => second.push(m), () => undefined);
  t.same(second, [{ op: 'unsubscribe', mids: ['1.2'], id: 2 }]);
  t.notOk(r.settle(ack(1)), 'the lost connection\'s id answers nothing now');
  t.ok(r.settle(ack(2)));
  t.match(await answer, { id: 2, status: 1 });
});

t.test('a refused subscribe rejects with the server\'s words and is not asked again', async (t) => {
  const r = new Requests();
  const refused = r.subscribe({ mids: ['nope'] }, () => undefined);
  r.settle(ack(1, 0));
  await t.rejects(refused, RefusedError);
  const next: ClientMessage[] = [];
  r.replay((m) => next.push(m), () => undefined);
  t.same(next, [], 'nothing to replay');
});

t.test('forgetting markets trims the kept subscribes; one naming nothing goes; stopping tells everyone waiting', async (t) => {
  const r = new Requests();
  void r.subscribe({ mids: ['1.1', '1.2'] }, () => undefined);
  r.settle(ack(1));
  r.forget({ mids: ['1.1'] });
  t.same(r.subscriptions.map((s) => s.mids), [['1.2']]);
  r.forget({ mids: ['1.2'] });
  t.same(r.subscriptions, [], 'a subscribe left naming nothing is dropped');
  const waiting = r.oneOff({ op: 'ping' }, undefined);
  r.fail(new Error('client stopped'));
  await t.rejects(waiting, /client stopped/);
});

t.test('a subscribe as the request carries it: empty lists and absent options left out', async (t) => {
  t.same(subscribeOf({ mids: [], eids: [5], conflate: 1000, delta: false }), { eids: [5], conflate: 1000 });
  t.same(subscribeOf({ sis: [1], depth: 0, delta: true }), { sis: [1], depth: 0, delta: true });
});
