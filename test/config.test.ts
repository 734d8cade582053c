import t from 'tap';
import { loadConfig } from '../src/config.js';

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
