// `npm start`: checks the settings, builds only when a source is newer than its build, then runs
// the service in this very process, so the signals npm passes on (and a terminal's) reach it.
// Plain JavaScript: it runs before anything is compiled. `npm start -- --help` lists the settings.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';

const root = new URL('../', import.meta.url);
const dist = (path) => new URL(`dist/src/${path}`, root);
const args = process.argv.slice(2);

/** The built settings reader, loaded apart from the service's (a `?` of its own), so a build after it is not shadowed. */
async function checkSettings() {
  if (args.includes('--help') || args.includes('-h') || !existsSync(dist('config.js'))) return;
  const { ConfigError, loadConfig } = await import(`${dist('config.js').href}?before-build`);
  try {
    loadConfig();
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    process.stderr.write(`configuration error: ${err.message}\n`);
    process.exit(2);
  }
}

/** `npm run build`, stopped with this process: a signal during it ends both. */
function build(why) {
  process.stderr.write(`building: ${why}\n`);
  const child = spawn('npm', ['run', 'build', '--silent'], { cwd: root, stdio: 'inherit' });
  const signals = ['SIGINT', 'SIGTERM', 'SIGHUP'];
  const stop = (signal) => child.kill(signal);
  for (const s of signals) process.on(s, stop);
  return new Promise((ok) => child.on('exit', (code, signal) => {
    for (const s of signals) process.off(s, stop);
    if (code !== 0) process.exit(signal ? 1 : code ?? 1);
    ok();
  }));
}

await checkSettings();
if (!existsSync(dist('cli/fresh.js'))) await build('nothing is built yet');
else {
  const { staleBuild } = await import(dist('cli/fresh.js').href);
  const stale = staleBuild();
  if (stale) await build(`${stale} is newer than its build`);
}
await import(dist('main.js').href);
