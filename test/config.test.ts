import t from 'tap';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describeSettings, loadConfig } from '../src/config.js';

t.test('defaults: port 8080, embedded database with demo data and simulator', async (t) => {
  const c = loadConfig({});
  t.equal(c.port, 8080);
  t.equal(c.databaseUrl, undefined);
  t.equal(c.demoData, true);
  t.equal(c.simulator, true);
  t.equal(c.maxBodyBytes, 1024 * 1024);
  t.ok(Object.isFrozen(c));
});

t.test('HOST: loopback with auth off, every interface with auth on, and whatever HOST says', async (t) => {
  t.equal(loadConfig({}).host, '127.0.0.1');
  t.equal(loadConfig({ AUTH: 'on' }).host, '0.0.0.0');
  t.equal(loadConfig({ HOST: '0.0.0.0' }).host, '0.0.0.0');
  t.equal(loadConfig({ AUTH: 'on', HOST: '127.0.0.1' }).host, '127.0.0.1');
});

t.test('with DATABASE_URL the demo data and simulator default to off', async (t) => {
  const c = loadConfig({ DATABASE_URL: 'postgres://u@h/db' });
  t.equal(c.databaseUrl, 'postgres://u@h/db');
  t.equal(c.demoData, false);
  t.equal(c.simulator, false);
});

t.test('the metrics port: 9464 on loopback whatever HOST is, a free one when PORT is 0, both settable', async (t) => {
  const c = loadConfig({ HOST: '10.0.0.5' });
  t.same([c.metricsHost, c.metricsPort], ['127.0.0.1', 9464]);
  t.equal(loadConfig({ AUTH: 'on' }).metricsHost, '127.0.0.1', 'closed with keys on too: opened on purpose, with METRICS_HOST');
  t.equal(loadConfig({ PORT: '0' }).metricsPort, 0, 'services started side by side (tests) do not collide');
  const set = loadConfig({ METRICS_HOST: '127.0.0.1', METRICS_PORT: '9100' });
  t.same([set.metricsHost, set.metricsPort], ['127.0.0.1', 9100]);
  t.throws(() => loadConfig({ METRICS_PORT: 'ninety' }), { name: 'ConfigError', message: /^METRICS_PORT: must be a whole number/ });
});

t.test('the metrics token: METRICS_TOKEN or the file METRICS_TOKEN_FILE, not both; a short or spaced token fails', async (t) => {
  t.equal(loadConfig({}).metricsToken, undefined);
  t.equal(loadConfig({ METRICS_TOKEN: 'a'.repeat(16) }).metricsToken, 'a'.repeat(16));
  const dir = mkdtempSync(join(tmpdir(), 'odds-config-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(join(dir, 'token'), 'from-a-secret-volume-0123\n');
  t.equal(loadConfig({ METRICS_TOKEN_FILE: join(dir, 'token') }).metricsToken, 'from-a-secret-volume-0123', 'the file, its final newline dropped');
  t.throws(() => loadConfig({ METRICS_TOKEN_FILE: join(dir, 'token'), METRICS_TOKEN: 'b'.repeat(16) }), /^METRICS_TOKEN_FILE: give either/);
  t.throws(() => loadConfig({ METRICS_TOKEN_FILE: join(dir, 'none') }), /^METRICS_TOKEN_FILE: cannot read/);
  t.throws(() => loadConfig({ METRICS_TOKEN: 'short' }), /^METRICS_TOKEN: the token must be 16 to 4096/);
  t.throws(() => loadConfig({ METRICS_TOKEN: 'has a space in it!!' }), /^METRICS_TOKEN: the token must be/);
  t.equal(loadConfig({}).metricsCacheMs, 1000);
  t.throws(() => loadConfig({ METRICS_CACHE_MS: '70000' }), /^METRICS_CACHE_MS: must be between 0 and 60000/);
});

t.test('ALLOWED_HOSTS: host names, subdomain wildcards or *, lower-cased; anything else fails naming it', async (t) => {
  t.same(loadConfig({}).allowedHosts, []);
  t.same(loadConfig({ ALLOWED_HOSTS: ' Odds.Example.com, *.bets.example ,odds.example.com' }).allowedHosts, ['odds.example.com', '*.bets.example']);
  t.same(loadConfig({ ALLOWED_HOSTS: '*' }).allowedHosts, ['*']);
  for (const bad of ['https://odds.example.com', 'odds.example.com:443', 'odds_example', 'a.*.example', '-x.example']) {
    t.throws(() => loadConfig({ ALLOWED_HOSTS: bad }), /^ALLOWED_HOSTS: must list host names/, bad);
  }
});

t.test('TRUSTED_PROXIES: addresses and CIDR blocks; TRUSTED_PROXY_HEADER names the header they write', async (t) => {
  const c = loadConfig({});
  t.same([c.trustedProxies, c.proxyHeader], [[], 'x-forwarded-for']);
  t.same(loadConfig({ TRUSTED_PROXIES: '10.0.0.0/8, 192.0.2.7,fd00::/8' }).trustedProxies, ['10.0.0.0/8', '192.0.2.7', 'fd00::/8']);
  t.equal(loadConfig({ TRUSTED_PROXY_HEADER: 'forwarded' }).proxyHeader, 'forwarded');
  for (const bad of ['10.0.0.0/33', 'fd00::/129', 'ingress-nginx', '10.0.0.0/8/1', '10.0.0/8']) {
    t.throws(() => loadConfig({ TRUSTED_PROXIES: bad }), /^TRUSTED_PROXIES: must list addresses or CIDR blocks/, bad);
  }
  t.throws(() => loadConfig({ TRUSTED_PROXY_HEADER: 'x-real-ip' }), /^TRUSTED_PROXY_HEADER: must be one of x-forwarded-for, forwarded/);
});

t.test('browser origins: none may publish; /ws takes the board alone with AUTH=off, any page with AUTH=on', async (t) => {
  const c = loadConfig({});
  t.same(c.ingestOrigins, []);
  t.same(c.wsOrigins, ['self']);
  t.same(loadConfig({ AUTH: 'on' }).wsOrigins, ['*']);
  const set = loadConfig({ INGEST_ORIGINS: 'https://feed.example', WS_ORIGINS: ' self, https://bets.example:8443 ,http://[::1]:8080' });
  t.same(set.ingestOrigins, ['https://feed.example']);
  t.same(set.wsOrigins, ['self', 'https://bets.example:8443', 'http://[::1]:8080']);
  t.same(loadConfig({ AUTH: 'on', WS_ORIGINS: '' }).wsOrigins, [], 'empty: no browser page at all');
});

t.test('a bad origin fails naming its variable', async (t) => {
  for (const [name, value] of [['WS_ORIGINS', 'bets.example'], ['WS_ORIGINS', 'https://bets.example/'], ['INGEST_ORIGINS', 'self'], ['INGEST_ORIGINS', 'https://Feed.example']]) {
    t.throws(() => loadConfig({ [name]: value }), { name: 'ConfigError', message: new RegExp(`^${name}: must list origins`) }, `${name}=${value}`);
  }
});

t.test('each bad value fails naming its variable', async (t) => {
  const cases: [Record<string, string>, RegExp][] = [
    [{ PORT: '70000' }, /^PORT: must be between/],
    [{ PORT: '8o8o' }, /^PORT: must be a whole number/],
    [{ DATABASE_URL: 'mysql://x' }, /^DATABASE_URL: must be a postgres/],
    [{ DATABASE_URL: 'not a url' }, /^DATABASE_URL/],
    [{ DEMO_DATA: 'maybe' }, /^DEMO_DATA: must be on or off/],
    [{ LOG_LEVEL: 'loud' }, /^LOG_LEVEL: must be one of/],
    [{ MAX_BODY_BYTES: '10' }, /^MAX_BODY_BYTES/],
  ];
  for (const [env, msg] of cases) {
    t.throws(() => loadConfig(env), { name: 'ConfigError', message: msg });
  }
});

t.test('NATS credentials and TLS: none by default, a password or an nkey seed file, TLS files when given', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'odds-config-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'x.pem');
  writeFileSync(file, 'x');
  t.same(loadConfig({}).natsAuth, { kind: 'none' });
  t.equal(loadConfig({}).natsTls, undefined);
  t.same(loadConfig({ NATS_USER: 'odds', NATS_PASSWORD: 'pw' }).natsAuth, { kind: 'password', user: 'odds', password: 'pw' });
  t.same(loadConfig({ NATS_NKEY_FILE: file }).natsAuth, { kind: 'nkey', seedFile: file });
  t.same(loadConfig({ NATS_TLS_CA: file }).natsTls, { caFile: file, certFile: undefined, keyFile: undefined });
  t.same(loadConfig({ NATS_TLS_CERT: file, NATS_TLS_KEY: file }).natsTls, { caFile: undefined, certFile: file, keyFile: file });
});

t.test('bad NATS credentials or TLS settings fail naming the variable', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'odds-config-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'x.pem');
  writeFileSync(file, 'x');
  const cases: [Record<string, string>, RegExp][] = [
    [{ NATS_USER: 'odds' }, /^NATS_PASSWORD: is required when NATS_USER is set/],
    [{ NATS_PASSWORD: 'pw' }, /^NATS_USER: is required when NATS_PASSWORD is set/],
    [{ NATS_NKEY_FILE: file, NATS_USER: 'odds', NATS_PASSWORD: 'pw' }, /^NATS_NKEY_FILE: give either/],
    [{ NATS_NKEY_FILE: join(dir, 'missing.nk') }, /^NATS_NKEY_FILE: cannot read the file/],
    [{ NATS_TLS_CA: join(dir, 'missing.pem') }, /^NATS_TLS_CA: cannot read the file/],
    [{ NATS_TLS_CERT: file }, /^NATS_TLS_KEY: NATS_TLS_CERT and NATS_TLS_KEY go together/],
    [{ NATS_TLS_KEY: file }, /^NATS_TLS_CERT: NATS_TLS_CERT and NATS_TLS_KEY go together/],
  ];
  for (const [env, msg] of cases) t.throws(() => loadConfig(env), { name: 'ConfigError', message: msg }, JSON.stringify(env));
});

t.test('--help states each whole-number setting\'s range as loadConfig takes it: both ends taken, one past either refused', async (t) => {
  let checked = 0;
  for (const { name, rule } of describeSettings()) {
    const range = /^(0 \(off\), or )?(\d+) to (\d+)$/.exec(rule);
    if (!range) continue;
    const [min, max] = [Number(range[2]), Number(range[3])];
    const takes = (v: number) => { try { loadConfig({ [name]: String(v) }); return true; } catch { return false; } };
    t.ok(takes(min) && takes(min + 1) && takes(max), `${name}: ${rule}, both ends taken, and one past the lower`);
    if (min > 0 && !(range[1] && min === 1)) t.notOk(takes(min - 1), `${name}: ${min - 1} refused`);
    if (range[1]) t.ok(takes(0), `${name}: 0 taken`);
    t.notOk(takes(max + 1), `${name}: ${max + 1} refused`);
    checked++;
  }
  t.ok(checked > 50, `${checked} settings checked`);
});
