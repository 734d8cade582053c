import t from 'tap';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/**
 * A benchmark reads its settings before it starts anything, and a value that is set but unusable
 * stops it there, naming the variable: a typo must not turn into a run that measures something
 * else than was asked. Run as `npm run bench:fanout` runs it, with no database reached.
 */
const FANOUT = fileURLToPath(new URL('../../bench/fanout.js', import.meta.url));

function fanout(env: Record<string, string>): { status: number | null; stderr: string } {
  const { DATABASE_URL: _, ...base } = process.env;
  const r = spawnSync(process.execPath, [FANOUT], { env: { ...base, ...env }, encoding: 'utf8', timeout: 30_000 });
  return { status: r.status, stderr: r.stderr };
}

t.test('a number that is not one stops the run, naming the variable', async (t) => {
  const r = fanout({ BENCH_SECONDS: 'two' });
  t.equal(r.status, 1);
  t.match(r.stderr, /BENCH_SECONDS must be a positive number, got "two"/);
});

t.test('a format outside the known ones stops the run, naming the variable and what it takes', async (t) => {
  const r = fanout({ BENCH_FORMATS: 'json,xml' });
  t.equal(r.status, 1);
  t.match(r.stderr, /BENCH_FORMATS takes json, proto, deflate; got "xml"/);
});

t.test('a flag that is neither on nor off stops the run, naming the variable', async (t) => {
  const r = fanout({ FANOUT_MEMORY: 'maybe' });
  t.equal(r.status, 1);
  t.match(r.stderr, /FANOUT_MEMORY must be on or off, got "maybe"/);
});
