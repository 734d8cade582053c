/**
 * The runbook's backup and restore (docs/operations.md), by its own commands: pg_dump of a live
 * service's database, pg_restore into a fresh empty one, and a service started on the copy serves
 * the same reference data, honours the same API keys and keeps each client's stored set. pg_dump
 * and pg_restore must be of the server's major version; where this machine has none (the embedded
 * Postgres ships no client tools) the test says so and is skipped.
 */
import t from 'tap';
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { createKey } from '../../src/auth/keys.js';
import { adminUrl, freshDatabase, sqlClient } from '../helpers/db.js';
import { http, keyLive, startTestService, type TestService } from '../helpers/service.js';

const run = promisify(execFile);

/** The major version of the client tools on PATH, or undefined when there are none. */
async function toolsMajor(): Promise<number | undefined> {
  try {
    const out = await Promise.all(['pg_dump', 'pg_restore'].map((tool) => run(tool, ['--version'])));
    const majors = out.map((o) => Number(/(\d+)\.\d+/.exec(o.stdout)?.[1]));
    return majors[0] === majors[1] ? majors[0] : undefined;
  } catch {
    return undefined;
  }
}

const serverMajor = async (): Promise<number> => {
  const c = await sqlClient(t, adminUrl());
  return Math.floor(Number((await c.query<{ server_version_num: string }>('SHOW server_version_num')).rows[0]!.server_version_num) / 10000);
};

const [tools, server] = await Promise.all([toolsMajor(), serverMajor()]);
const skip = tools === undefined ? 'no pg_dump and pg_restore on PATH' : tools !== server ? `pg_dump ${tools} here, Postgres ${server} to dump` : false;

/** A route's answer as a client with `key` sees it. */
const get = (svc: TestService, path: string, key: string) => http(svc.url, path, { headers: { 'x-api-key': key } });
const subscribe = (svc: TestService, key: string, mids: string[]) => http<{ status: number; message: string }>(svc.url, '/api/v1/subscribe', {
  method: 'POST', headers: { 'x-api-key': key, 'content-type': 'application/json' }, body: JSON.stringify({ data: mids }),
});

t.test('a dump of a live service restored into an empty database: the same data, keys and stored sets are served', { skip }, async (t) => {
  const original = await startTestService(t, { AUTH: 'on' });
  const { token } = await createKey(original.pool, 'backoffice', 'subscriber');
  await keyLive(original.url, token);
  t.equal((await subscribe(original, token, ['1.200001001'])).status, 200, 'a stored set of one market');

  const dir = await mkdtemp(join(tmpdir(), 'odds-backup-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const file = join(dir, 'odds.dump');
  // The runbook's commands, word for word but for the URLs.
  await run('pg_dump', ['--format=custom', `--file=${file}`, original.databaseUrl]);
  const copy = await freshDatabase(t);
  await run('pg_restore', ['--no-owner', '--no-privileges', '--exit-on-error', '--single-transaction', `--dbname=${copy}`, file]);

  // One market per client, so a stored set that came back is full.
  const restored = await startTestService(t, { AUTH: 'on', CLIENT_MAX_MARKETS: '1' }, copy);
  const paths = ['/api/v1/sports', '/api/v1/sports/events?si=4,1,2,7', '/api/v1/events/markets?eid=30000001,30000002,30000011', '/api/v1/markets/result?mid=1.200001008,1.200002001,1.200005001'];
  for (const path of paths) {
    const [was, now] = [await get(original, path, token), await get(restored, path, token)];
    t.equal(now.status, 200, `${path}: the key still opens it`);
    t.same(now.body, was.body, `${path}: as before`);
  }
  const full = await subscribe(restored, token, ['1.200001002']);
  t.not(full.status, 200, 'the client\'s stored set came back: one more market is past the limit');
  t.match(full.body.message, /limit of 1 stored markets per client \(it holds 1\)/);
  t.equal((await get(restored, '/api/v1/sports', 'ok_not_a_key')).status, 401, 'and a key that never was is still refused');
});
