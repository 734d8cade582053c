/**
 * The names and origins the service answers to, decided without a server: localhost and any IP
 * address always, the names ALLOWED_HOSTS lists (exact, `*.domain`, `*`), a missing Host let
 * through; a browser's Origin only as the route's variable allows (`self` meaning the request's
 * own Host, and only when that is a name the service answers to).
 */
import t from 'tap';
import { HostPolicy } from '../../src/http/host.js';
import { OriginPolicy } from '../../src/http/origin.js';

t.test('hosts: localhost and addresses always, listed names, subdomains by *.name, anything by *', async (t) => {
  const hosts = new HostPolicy(['odds.example.com', '*.internal']);
  for (const ok of ['localhost', 'localhost:8080', '127.0.0.1:9464', '[::1]:8080', '10.1.2.3', 'odds.example.com', 'pod-1.internal:8080', '']) t.ok(hosts.allows(ok), ok || '(no Host)');
  for (const no of ['evil.example', 'example.com', 'internal', 'odds.example.com.evil.net']) t.notOk(hosts.allows(no), no);
  t.match(hosts.refusal('evil.example'), { code: 'MISDIRECTED', message: 'host evil.example is not a name of this service: this service answers to localhost and IP addresses and odds.example.com, *.internal (ALLOWED_HOSTS)' });
  t.match(hosts.refusal('x'.repeat(500)), { message: new RegExp(`^host x{100} is not`) }, 'a long Host is cut in the refusal');
  t.ok(new HostPolicy(['*']).allows('anything.at.all'));
});

t.test('origins: none needed without one; listed ones; self only as the request\'s own allowed Host', async (t) => {
  const hosts = new HostPolicy(['odds.example.com']);
  const ws = new OriginPolicy('/ws', 'WS_ORIGINS', ['self', 'https://board.example.com'], hosts);
  t.doesNotThrow(() => ws.check('', 'anything'), 'no Origin: not a browser page');
  t.doesNotThrow(() => ws.check('https://board.example.com', 'odds.example.com'));
  t.doesNotThrow(() => ws.check('https://ODDS.example.com', 'odds.example.com'), 'self, any case');
  t.throws(() => ws.check('https://rebound.evil', 'rebound.evil'), { code: 'FORBIDDEN', message: "origin https://rebound.evil may not open /ws: browser pages may open it only from the service's own origin, https://board.example.com (WS_ORIGINS)" },
    'a rebound name sends its own name as Host and Origin: not self');
  const none = new OriginPolicy('/ingest', 'INGEST_ORIGINS', [], hosts);
  t.throws(() => none.check('https://odds.example.com', 'odds.example.com'), { message: /browser pages may not open it \(INGEST_ORIGINS lists no origin\)/ });
  t.doesNotThrow(() => new OriginPolicy('/ws', 'WS_ORIGINS', ['*'], hosts).check('https://anyone', 'x'));
});
