import t from 'tap';
import { Admission, type AdmissionRefusals, type AdmissionScope } from '../../src/http/admission.js';
import { startTestService } from '../helpers/service.js';
import { Client } from '../helpers/ws.js';

/**
 * The admission limits that protect a pod in a reconnect storm: new sockets
 * and subscribe requests per source address and per pod, each refusal with
 * its reason and when to come back, and a source map that stays bounded.
 */
/** What the metrics would be told: each refusal's scope, in order. */
class Refusals implements AdmissionRefusals {
  readonly scopes: AdmissionScope[] = [];
  admissionRefused(scope: AdmissionScope): void {
    this.scopes.push(scope);
  }
}

const limits = { handshakesPerSource: 3, handshakesTotal: 5, subscribesPerSource: 2, subscribesTotal: 100, maxSources: 8, source: 'address' } as const;

t.test('a source past its handshake rate is refused 429 with Retry-After; others still get in', async (t) => {
  const refusals = new Refusals();
  const a = new Admission(limits, refusals);
  const now = Date.now();
  for (let i = 0; i < 3; i++) t.equal(a.handshake('10.0.0.1', now), undefined);
  const no = a.handshake('10.0.0.1', now)!;
  t.equal(no.code, 'RATE_LIMITED');
  t.equal(no.message, 'handshake rate limit: at most 3 new sockets per second from one address; retry after 1 s');
  t.same(no.headers, { 'retry-after': '1' });
  t.equal(a.handshake('10.0.0.2', now), undefined, 'another address is not held back by the first');
  t.same(refusals.scopes, ['handshake_source']);
  t.equal(a.handshake('10.0.0.1', now + 1000), undefined, 'a second later the address may open again');
});

t.test('past the pod\'s handshake rate every source is refused 503 (BUSY), and told to try again or elsewhere', async (t) => {
  const refusals = new Refusals();
  const a = new Admission(limits, refusals);
  const now = Date.now();
  for (let i = 0; i < 5; i++) t.equal(a.handshake(`10.0.1.${i}`, now), undefined);
  const no = a.handshake('10.0.1.9', now)!;
  t.equal(no.code, 'BUSY');
  t.match(no.message, /^handshake rate limit: this server opens at most 5 new sockets per second; retry after 1 s \(another pod may take you\)$/);
  t.equal(no.headers['retry-after'], '1');
  t.same(refusals.scopes, ['handshake_total']);
});

t.test('the per-source map stays within its bound however many addresses come', async (t) => {
  const a = new Admission({ ...limits, handshakesTotal: 0 }, new Refusals());
  for (let i = 0; i < 1000; i++) a.handshake(`10.1.${i >> 8}.${i & 255}`, Date.now());
  t.ok(a.sources <= 8, `${a.sources} sources held`);
});

t.test('a subscribe past the rate gets an ack with status 0 saying why and when; nothing changed', async (t) => {
  const svc = await startTestService(t, { WS_SUBSCRIBES_PER_SOURCE: '2' });
  const c = await Client.connect(svc.url);
  t.teardown(() => c.close());
  const mid = '1.200001001';
  t.equal((await c.request({ op: 'subscribe', mids: [mid] })).status, 1);
  t.equal((await c.request({ op: 'subscribe', mids: [mid] })).status, 1);
  const third = await c.request({ op: 'subscribe', mids: ['1.200001002'] });
  t.same(third, { op: 'ack', id: third.id, status: 0, message: 'subscribe rate limit: at most 2 subscribe requests per second from one address; nothing changed, retry after 1 s' });
  const un = await c.request({ op: 'unsubscribe', mids: ['1.200001002'] });
  t.equal(un.message, 'Unsubscribed from market 1.200001002', 'other requests are not held back');
});
