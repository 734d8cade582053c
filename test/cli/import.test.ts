import t from 'tap';
import { freePort } from '../helpers/net.js';
import { existsSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { freshDatabase, migratedDatabase, sqlClient } from '../helpers/db.js';
import { http, startTestService } from '../helpers/service.js';
import { eventually } from '../helpers/wait.js';
import { IMPORT_CLI, postgresOn, postmasterPid, runTool, startMain } from './processes.js';
import { tempDir } from '../helpers/temp-dir.js';

const runImport = (files: string[], env: Record<string, string | undefined>) => runTool(IMPORT_CLI, files, env);

const chunks = <T>(list: T[], size = 50): T[][] =>
  Array.from({ length: Math.ceil(list.length / size) }, (_, i) => list.slice(i * size, (i + 1) * size));


// The source: the demo service's every REST answer, saved as a user would with curl.
const dir = await tempDir(t);
const source = await startTestService(t);
const answers: { path: string; text: string }[] = [];
const files: Record<'sports' | 'events' | 'markets' | 'results', string[]> = { sports: [], events: [], markets: [], results: [] };
async function save<T>(kind: keyof typeof files, path: string): Promise<T> {
  const reply = await http<T>(source.url, path);
  if (reply.status !== 200) throw new Error(`${path} answered ${reply.status}: ${reply.text}`);
  answers.push({ path, text: reply.text });
  const file = join(dir, `${kind}-${files[kind].length}.json`);
  await writeFile(file, reply.text);
  files[kind].push(file);
  return reply.body;
}
type Market = { mid: string; m?: { mid: string }[] };
const sports = await save<{ si: number }[]>('sports', '/api/v1/sports');
let events = 0;
const eids: number[] = [];
for (const sis of chunks(sports.map((s) => s.si))) {
  const body = await save<{ data: Record<string, { eid: number }[]> }>('events', `/api/v1/sports/events?si=${sis.join(',')}`);
  for (const list of Object.values(body.data)) for (const e of list) (events++, eids.push(e.eid));
}
let markets = 0;
const mids: string[] = [];
for (const chunk of chunks(eids)) {
  const body = await save<{ data: Record<string, Market[]> }>('markets', `/api/v1/events/markets?eid=${chunk.join(',')}`);
  for (const list of Object.values(body.data)) for (const m of list) (markets++, mids.push(m.mid, ...(m.m ?? []).map((n) => n.mid)));
}
let results = 0;
for (const chunk of chunks(mids)) results += (await save<unknown[]>('results', `/api/v1/markets/result?mid=${chunk.join(',')}`)).length;
const total = sports.length + events + markets + results;
// Children first, to show the CLI orders items itself.
const allFiles = [...files.results, ...files.markets, ...files.events, ...files.sports];
const summary = (inserted: number, updated: number, rejected: number) =>
  new RegExp(`^imported ${allFiles.join(' ')}: ${inserted} inserted, ${updated} updated, ${rejected} rejected$`, 'm');

/** The empty database the first import seeds: the second imports the same files into it again. */
const seeded = await freshDatabase(t);

t.test('the demo service has something of every kind to copy', async (t) => {
  t.ok(sports.length >= 4 && events > 0 && markets > events && results >= markets, `${sports.length} sports, ${events} events, ${markets} markets, ${results} results`);
});

t.test('one service\'s REST answers seed an empty database, and a service on it answers byte for byte the same', async (t) => {
  const run = await runImport(allFiles, { DATABASE_URL: seeded });
  t.equal(run.code, 0, `exit code (stderr: ${run.stderr})`);
  t.match(run.stdout, summary(total, 0, 0));
  const copy = await startTestService(t, { DEMO_DATA: 'off' }, seeded);
  for (const { path, text } of answers) t.equal((await http(copy.url, path)).text, text, path);
});

t.test('importing the same files again inserts nothing and updates every item', async (t) => {
  const again = await runImport(allFiles, { DATABASE_URL: seeded });
  t.equal(again.code, 0, again.stderr);
  t.match(again.stdout, summary(0, total, 0));
});

t.test('an item the database refuses is rejected alone; the rest of its batch is imported, exit 1', async (t) => {
  const url = await migratedDatabase(t);
  const body = JSON.parse(await readFile(files.events[0], 'utf8')) as { data: Record<string, unknown[]> };
  const [si, list] = Object.entries(body.data).find(([, l]) => l.length > 1)!;
  list.splice(1, 0, { ...(list[0] as object), eid: 99999999, si: 424242, li: 424242 });
  const bad = join(await tempDir(t), 'events.json');
  await writeFile(bad, JSON.stringify(body));
  const run = await runImport([bad, files.sports[0]], { DATABASE_URL: url });
  t.equal(run.code, 1);
  t.match(run.stdout, new RegExp(`^imported ${bad} ${files.sports[0]}: ${sports.length + events} inserted, 0 updated, 1 rejected$`, 'm'));
  const at = Object.keys(body.data).slice(0, Object.keys(body.data).indexOf(si)).reduce((n, k) => n + body.data[k].length, 0) + 1;
  t.match(run.stdout, `\n  ${bad} item ${at} (event 99999999): si 424242 does not exist in sports\n`);
  const db = await sqlClient(t, url);
  t.equal((await db.query('SELECT count(*)::int AS n FROM events')).rows[0].n, events, 'every other event is in');
});

t.test('an item validation refuses is rejected without reaching the database, exit 1', async (t) => {
  const url = await migratedDatabase(t);
  const bad = join(await tempDir(t), 'sports.json');
  await writeFile(bad, JSON.stringify([{ si: 7, na: 'Golf', a: 'yes' }, { si: 8, na: 'Darts', a: true }]));
  const run = await runImport([bad], { DATABASE_URL: url });
  t.equal(run.code, 1);
  t.match(run.stdout, `imported ${bad}: 1 inserted, 0 updated, 1 rejected\n  ${bad} item 0 (sport 7): a must be true or false\n`);
});

t.test('over 1000 items, a progress line per batch goes to stderr', async (t) => {
  const url = await migratedDatabase(t);
  const big = join(await tempDir(t), 'sports.json');
  await writeFile(big, JSON.stringify(Array.from({ length: 1200 }, (_, i) => ({ si: i + 1, na: `Sport ${i + 1}`, a: true }))));
  const run = await runImport([big], { DATABASE_URL: url });
  t.equal(run.code, 0, run.stderr);
  const where = new URL(url);
  t.equal(run.stderr, `import: database: DATABASE_URL (${where.username}@${where.host}${where.pathname})\nimport: 500/1200 items\nimport: 1000/1200 items\nimport: 1200/1200 items\n`, 'the database named, without its password');
  t.match(run.stdout, ': 1200 inserted, 0 updated, 0 rejected');
});

// The database is unreachable here: a usage error must be found before connecting.
const NO_DB = `postgres://postgres@127.0.0.1:${await freePort()}/none`;

t.test('a missing file: message and exit 2', async (t) => {
  const run = await runImport([files.sports[0], join(dir, 'missing.json')], { DATABASE_URL: NO_DB });
  t.equal(run.code, 2);
  t.match(run.stderr, /^import: cannot read \S+missing\.json: ENOENT/);
  t.match(run.stderr, /^usage: npm run import -- FILE\.\.\./m);
  t.equal(run.stdout, '');
});

t.test('a file that is not JSON: message and exit 2', async (t) => {
  const bad = join(await tempDir(t), 'bad.json');
  await writeFile(bad, '[{"si": 1,');
  const run = await runImport([bad], { DATABASE_URL: NO_DB });
  t.equal(run.code, 2);
  t.match(run.stderr, `import: ${bad} is not valid JSON`);
});

t.test('JSON of no REST shape: message naming what was expected, exit 2', async (t) => {
  const bad = join(await tempDir(t), 'odd.json');
  await writeFile(bad, '{"sports": []}');
  const run = await runImport([bad], { DATABASE_URL: NO_DB });
  t.equal(run.code, 2);
  t.match(run.stderr, `import: ${bad}: an object without a "data" key; expected one of: the sport list`);
});

t.test('no FILE: usage and exit 2', async (t) => {
  const run = await runImport([], { DATABASE_URL: NO_DB });
  t.equal(run.code, 2);
  t.match(run.stderr, /give at least one FILE/);
  t.match(run.stderr, /the one the running service holds/);
});

t.test('an unreachable database: message and exit 1', async (t) => {
  const run = await runImport(files.sports, { DATABASE_URL: NO_DB });
  t.equal(run.code, 1);
  t.match(run.stderr, /import: cannot reach the database/);
});

/**
 * The embedded Postgres folder of the two tests below: made (initdb) by the first, which leaves it
 * stopped, and started again by the second's service, as a developer's folder is from one command
 * to the next.
 */
const pgDir = join(dir, 'pg');

t.test('without DATABASE_URL it imports into the embedded Postgres folder and stops it after', async (t) => {
  const env = { DATABASE_URL: undefined, EMBEDDED_PG_DIR: pgDir };
  const first = await runImport(files.sports, env);
  t.equal(first.code, 0, first.stderr);
  t.match(first.stderr, `import: database: the embedded Postgres in ${pgDir}, started for this command (no service runs on it)`);
  t.match(first.stdout, `: ${sports.length} inserted, 0 updated, 0 rejected`);
  t.notOk(existsSync(join(pgDir, 'postmaster.pid')), 'embedded server stopped');
  const second = await runImport(files.sports, env);
  t.match(second.stdout, `: 0 inserted, ${sports.length} updated, 0 rejected`, 'the data stayed in the folder');
});

t.test('without DATABASE_URL, beside a service running on the embedded folder, it imports through that service\'s Postgres and leaves it running', async (t) => {
  const svc = await startMain({ DATABASE_URL: undefined, EMBEDDED_PG_DIR: pgDir, SIMULATOR: 'off' });
  t.teardown(async () => {
    svc.child.kill('SIGTERM');
    await svc.exited;
  });
  const postgres = postmasterPid(pgDir);
  const file = join(await tempDir(t), 'sports.json');
  await writeFile(file, JSON.stringify([{ si: 902, na: 'Bandy', a: true }]));
  const run = await runImport([file], { DATABASE_URL: undefined, EMBEDDED_PG_DIR: pgDir });
  t.equal(run.code, 0, run.stderr);
  t.match(run.stderr, new RegExp(`import: database: the embedded Postgres in ${pgDir} of the running service \\(npm start, pid \\d+\\)`));
  t.match(run.stdout, `imported ${file}: 1 inserted, 0 updated, 0 rejected`);
  // The service reads the change on NOTIFY, moments after the import commits.
  const sports = await eventually(() => http<{ si: number }[]>(svc.url, '/api/v1/sports'), (r) => r.body.some((s) => s.si === 902));
  t.ok(sports.body.some((s) => s.si === 902), 'the service answers with the imported sport');
  t.same(postgresOn(pgDir), [postgres], 'the service\'s Postgres still runs, and no other');
});
