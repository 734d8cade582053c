/**
 * `npm test`: runs tap against a real Postgres. With DATABASE_URL set (CI, a
 * developer's server) that one is used; otherwise an embedded server is
 * started for the run and stopped after it. Each test file makes its own
 * database on it, so files run in parallel without seeing each other.
 */
import { spawn } from 'node:child_process';
import { rm } from 'node:fs/promises';
import { createLogger } from '../src/log.js';
import { startEmbedded, type EmbeddedServer } from '../src/db/embedded.js';

const log = createLogger('info', true, (l) => process.stderr.write(l));
let embedded: EmbeddedServer | undefined;
// A folder per run, so runs side by side (two terminals, CI and a developer) never share a server.
const dir = `.data/test-pg/${process.pid}`;
if (!process.env.DATABASE_URL) {
  embedded = await startEmbedded(dir, 0, log);
}
const env = { ...process.env, DATABASE_URL: process.env.DATABASE_URL || embedded!.url };
const tap = spawn('npx', ['tap', ...process.argv.slice(2)], { stdio: 'inherit', env });
const forward = (sig: NodeJS.Signals) => tap.kill(sig);
process.on('SIGINT', forward);
process.on('SIGTERM', forward);
const code = await new Promise<number>((ok) => tap.on('exit', (c, sig) => ok(c ?? (sig ? 1 : 0))));
if (embedded) {
  await embedded.stop();
  await rm(dir, { recursive: true, force: true });
}
process.exit(code);
