import t from 'tap';
import { Admission, type AdmissionRefusals, type AdmissionScope } from '../../src/http/admission.js';
import { FakeClock } from '../helpers/clock.js';

/**
 * The admission limits that protect a pod in a reconnect storm, over a clock the test moves: new
 * sockets and subscribe requests per source and per pod, each refusal with its reason and when to
 * come back, and a source map that stays bounded. (Over a real socket: http/ws.test.ts.)
 */
/** What the metrics would be told: each refusal's scope, in order. */
class Refusals implements AdmissionRefusals {
  readonly scopes: AdmissionScope[] = [];
  admissionRefused(scope: AdmissionScope): void {
    this.scopes.push(scope);
  }
}

const limits = { handshakesPerSource: 3, handshakesTotal: 5, subscribesPerSource: 2, subscribesTotal: 4, maxSources: 8, source: 'address' } as const;

t.test('a source past its handshake rate is refused 429 with Retry-After; others still get in', async (t) => {
  const refusals = new Refusals();
  const clock = new FakeClock();
  const a = new Admission(limits, refusals, clock);
  for (let i = 0; i < 3; i++) t.equal(a.handshake('10.0.0.1'), undefined);
  const no = a.handshake('10.0.0.1')!;
  t.equal(no.code, 'RATE_LIMITED');
  t.equal(no.message, 'handshake rate limit: at most 3 new sockets per second from one address; retry after 1 s');
  t.same(no.headers, { 'retry-after': '1' });
  t.equal(a.handshake('10.0.0.2'), undefined, 'another address is not held back by the first');
  t.same(refusals.scopes, ['handshake_source']);
  clock.advance(333);
  t.ok(a.handshake('10.0.0.1'), 'a token comes back in a third of a second, not before');
  clock.advance(1);
  t.equal(a.handshake('10.0.0.1'), undefined, 'and then the address may open again');
});

t.test('past the pod\'s handshake rate every source is refused 503 (BUSY), and told to try again or elsewhere', async (t) => {
  const refusals = new Refusals();
  const clock = new FakeClock();
  const a = new Admission(limits, refusals, clock);
  for (let i = 0; i < 5; i++) t.equal(a.handshake(`10.0.1.${i}`), undefined);
  const no = a.handshake('10.0.1.9')!;
  t.equal(no.code, 'BUSY');
  t.match(no.message, /^handshake rate limit: this server opens at most 5 new sockets per second; retry after 1 s \(another pod may take you\)$/);
  t.equal(no.headers['retry-after'], '1');
  t.same(refusals.scopes, ['handshake_total']);
  clock.advance(1000);
  t.equal(a.handshake('10.0.1.9'), undefined, 'a second later the pod takes sockets again');
});

t.test('subscribes have limits of their own, per source and per pod, with keys as the source where keys are in force', async (t) => {
  const refusals = new Refusals();
  const clock = new FakeClock();
  const a = new Admission({ ...limits, source: 'key' }, refusals, clock);
  t.equal(a.subscribe('k1'), undefined);
  t.equal(a.subscribe('k1'), undefined);
  t.match(a.subscribe('k1'), { code: 'RATE_LIMITED', message: 'subscribe rate limit: at most 2 subscribe requests per second per API key; nothing changed, retry after 1 s' });
  t.equal(a.handshake('k1'), undefined, 'its handshakes are counted apart');
  t.equal(a.subscribe('k2'), undefined);
  t.equal(a.subscribe('k3'), undefined);
  t.match(a.subscribe('k4'), { code: 'RATE_LIMITED', message: 'subscribe rate limit: at most 4 subscribe requests per second on this server; nothing changed, retry after 1 s' }, 'the pod\'s fifth subscribe of the second');
  t.same(refusals.scopes, ['subscribe_source', 'subscribe_total']);
  clock.advance(500);
  t.equal(a.subscribe('k1'), undefined, 'half a second brings back one of a source\'s two');
});

t.test('the per-source map stays within its bound however many sources come', async (t) => {
  const a = new Admission({ ...limits, handshakesTotal: 0 }, new Refusals(), new FakeClock());
  for (let i = 0; i < 1000; i++) a.handshake(`10.1.${i >> 8}.${i & 255}`);
  t.ok(a.sources <= 8, `${a.sources} sources held`);
});
