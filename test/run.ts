/**
 * `npm test`: runs tap against a real Postgres. With DATABASE_URL set (CI, a
 * developer's server) that one is used; otherwise an embedded server is
 * started for the run and stopped after it. Each test file makes its own
 * database on it, so files run in parallel without seeing each other.
 */
import { spawn } from 'node:child_process';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { ConfigError, loadConfig } from '../src/config.js';
import { createLogger } from '../src/log.js';
import { startEmbedded, type EmbeddedServer } from '../src/db/embedded.js';
import { noBuildMessage, uwsBuild } from '../src/http/uws.js';

// Every server test would fail alike: say it once, before a database is started for nothing.
if (!uwsBuild.native) {
  process.stderr.write(`npm test: cannot run: ${noBuildMessage()}\n`);
  process.exit(1);
}
const log = createLogger('info', true, (l) => process.stderr.write(l));
let embedded: EmbeddedServer | undefined;
let dir = '';
if (!process.env.DATABASE_URL) {
  try {
    // A folder per run beside the embedded data folder, so runs side by side
    // (two terminals, CI and a developer) never share a server.
    dir = join(loadConfig().embeddedPgDir, '..', 'test-pg', String(process.pid));
    embedded = await startEmbedded(dir, 0, log, { kind: 'cli', command: 'npm test', stopsOnSignal: true });
  } catch (err) {
    process.stderr.write(`${err instanceof ConfigError ? 'configuration error' : 'npm test'}: ${(err as Error).message}\n`);
    process.exit(1);
  }
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
