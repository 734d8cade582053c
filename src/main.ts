import { ConfigError, OWN_FILES, describeSettings, loadConfig, openFileLimit, socketsFor, type Config } from './config.js';
import { createLogger, errorFields, type Logger } from './log.js';
import { startEmbedded, wipeEmbedded, type EmbeddedServer } from './db/embedded.js';
import { noBuildMessage, uwsBuild } from './http/uws.js';
import { bindRefusal } from './lib/free-port.js';
import type { Service } from './service.js';

/** What went wrong, in words: some errors carry only a code, and a rejection may carry nothing. */
function reason(err: unknown): string {
  const { message, code } = (err ?? {}) as { message?: string; code?: string };
  return message || code || (err === undefined ? 'no reason given' : String(err));
}

/** The command line: `--fresh`, and `--help` (handled before the settings are read). */
function parseArgs(args: string[], config: Config): { fresh: boolean } {
  const unknown = args.filter((a) => a !== '--fresh');
  if (unknown.length) throw new ConfigError('arguments', `unknown ${unknown.join(' ')}; the only ones are --fresh (start from a clean embedded demo) and --help`);
  const fresh = args.includes('--fresh');
  if (fresh && config.databaseUrl) {
    throw new ConfigError('--fresh', 'deletes the embedded Postgres data folder, and DATABASE_URL is set, so there is none to delete; clear that database yourself, or unset DATABASE_URL');
  }
  return { fresh };
}

/**
 * The socket cap against the open-file limit. Unset, WS_MAX_SOCKETS was derived from the limit
 * (config.ts): said once, as information. Set above what the limit allows, the operator is warned:
 * in a silent reconnect storm the process holds each vanished client's dead socket beside its new
 * one until the idle timeout (docs/storms.md), and short of files accept() fails and new
 * handshakes wait unanswered in the kernel until dead sockets are reaped (measured at 12 s).
 */
function checkOpenFiles(config: Config, log: Logger): void {
  if (config.wsMaxSocketsFromFiles !== undefined) {
    log.info('WS_MAX_SOCKETS is not set: the socket cap is what the open-file limit leaves for a reconnect storm', { wsMaxSockets: config.wsMaxSockets, openFiles: config.wsMaxSocketsFromFiles });
    return;
  }
  const limit = openFileLimit();
  const needs = 2 * config.wsMaxSockets + OWN_FILES;
  if (limit !== undefined && limit < needs) {
    log.warn('WS_MAX_SOCKETS is more than the open-file limit allows through a reconnect storm of a full pod', {
      limit, needs, wsMaxSockets: config.wsMaxSockets,
      remedy: `raise the limit to ${needs} (ulimit -n, systemd LimitNOFILE, the container runtime's nofile) or set WS_MAX_SOCKETS to at most ${socketsFor(limit)}`,
    });
  }
}

/** `--help`: the command line, then every setting as loadConfig reads it, with what it takes and its default. */
function help(): string {
  const settings = describeSettings();
  const width = Math.max(...settings.map((s) => s.name.length)) + 2;
  return [
    'usage: npm start [-- --fresh]    (or: node dist/src/main.js [--fresh])',
    '  --fresh     start from a clean embedded demo: deletes the data folder of the embedded Postgres (EMBEDDED_PG_DIR), data and API keys',
    '  -h, --help  this text',
    '',
    'Settings, read from the environment at start (a bad value stops the start, naming it); docs/configuration.md tells what each does.',
    'Defaults are those with AUTH=off and no DATABASE_URL.',
    '',
    ...settings.map((s) => `  ${s.name.padEnd(width)}${s.fallback ? `default ${s.fallback}` : ''}${s.rule ? `; ${s.rule}` : ''}`),
  ].join('\n') + '\n';
}

/**
 * A closed stdout or stderr (`npm start | head -3`, a log shipper gone) is no reason to stop serving,
 * still less to crash and leave the embedded Postgres running: what would have been written is
 * dropped, said once on the other stream while it is open.
 */
function surviveClosedOutput(): void {
  for (const [stream, other] of [[process.stdout, process.stderr], [process.stderr, process.stdout]] as const) {
    let said = false;
    stream.on('error', (err: NodeJS.ErrnoException) => {
      if (said || !other.writable) return;
      said = true;
      other.write(`${stream === process.stdout ? 'stdout' : 'stderr'} is closed (${err.code ?? err.message}): what the service writes there is dropped; it goes on serving\n`);
    });
  }
}

/**
 * npm passes SIGINT and SIGTERM on to the script it runs, but dies of SIGHUP without passing it on
 * (a supervisor or a closed window sending it to npm alone): the service it started, orphaned, stops
 * as on Ctrl-C. Only under `npm start`: run on its own, `node dist/src/main.js` may outlive its
 * parent on purpose (setsid, a shell that exits).
 */
function stopWhenNpmGone(stop: () => void, everyMs = 1000): void {
  if (process.env.npm_lifecycle_event !== 'start') return;
  const parent = process.ppid;
  const timer = setInterval(() => {
    if (process.ppid === parent) return;
    clearInterval(timer);
    stop();
  }, everyMs);
  timer.unref();
}

/**
 * The service's two ports, tried before the embedded Postgres is made: one another process holds
 * would otherwise fail the start only after initdb had filled a new data folder (about 40 MB),
 * left behind. A port taken between this try and the service's own bind still fails the start
 * there (http/listeners.ts), naming the same setting.
 */
async function checkPorts(config: Config): Promise<void> {
  const ports = [[config.host, 'HOST', config.port, 'PORT'], [config.metricsHost, 'METRICS_HOST', config.metricsPort, 'METRICS_PORT']] as const;
  for (const [host, hostSetting, port, portSetting] of ports) {
    // 0 takes whichever port is free: nothing to try.
    if (port === 0) continue;
    const code = await bindRefusal(host, port);
    if (code === 'EADDRINUSE') {
      throw new Error(`cannot listen on ${host}:${port}: the port is taken (${portSetting}): stop what holds it, or set ${portSetting} to another port`);
    }
    if (code) throw new Error(`cannot listen on ${host}:${port}: ${code} (${hostSetting}, ${portSetting})`);
  }
}

/** What has started so far, for a stop to stop. */
interface Started {
  embedded?: EmbeddedServer;
  service?: Service;
}

/**
 * The embedded Postgres (with no DATABASE_URL), then the service on it, each kept in `started` once it
 * runs. The service's modules load beside the Postgres's start rather than with this file, so --help,
 * a refused setting and a build that does not load answer without them (a third of a second of CPU).
 */
async function startParts(config: Config, fresh: boolean, log: Logger, stopping: AbortSignal, started: Started): Promise<Service> {
  const loading = import('./service.js');
  // Awaited below: a failed load is then the start's failure, not an unhandled rejection meanwhile.
  loading.catch(() => undefined);
  if (!config.databaseUrl) {
    // Only before an embedded Postgres: with DATABASE_URL a taken port costs nothing, and fails at the bind itself.
    await checkPorts(config);
    if (fresh) await wipeEmbedded(config.embeddedPgDir, log);
    started.embedded = await startEmbedded(config.embeddedPgDir, config.embeddedPgPort, log, { kind: 'service', command: 'npm start', stopsOnSignal: true, restarts: true });
  }
  const { startService } = await loading;
  const embedded = started.embedded;
  started.service = await startService(config, config.databaseUrl ?? embedded!.url, log, { databaseLost: () => embedded?.failed(), stopping });
  return started.service;
}

async function main(): Promise<void> {
  surviveClosedOutput();
  if (process.argv.slice(2).some((a) => a === '--help' || a === '-h')) {
    process.stdout.write(help());
    return;
  }
  let config;
  let args;
  try {
    config = loadConfig();
    args = parseArgs(process.argv.slice(2), config);
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`configuration error: ${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
  const log = createLogger(config.logLevel, config.logPretty);
  // Before anything is started (the embedded Postgres), so nothing outlives the refusal.
  if (!uwsBuild.native) {
    process.stderr.write(`cannot start: ${noBuildMessage()}\n`);
    process.exit(1);
  }
  checkOpenFiles(config, log);
  log.info('starting', {
    node: process.version, uws: uwsBuild.name, port: config.port, database: config.databaseUrl ? 'external' : 'embedded', demoData: config.demoData, simulator: config.simulator,
  });

  const parts: Started = {};
  // A signal during start stops what has started, then what start left running.
  const stopping = new AbortController();
  let started: Promise<void> = Promise.resolve();
  const stop = async (signal: string): Promise<void> => {
    if (stopping.signal.aborted) return;
    stopping.abort();
    log.info('shutting down', { signal, drainDelayMs: config.drainDelayMs, timeoutMs: config.shutdownTimeoutMs });
    setTimeout(() => {
      log.error('shutdown did not finish in time; exiting', { timeoutMs: config.shutdownTimeoutMs });
      process.exit(1);
    }, config.shutdownTimeoutMs).unref();
    try {
      await started;
      await parts.service?.close();
      await parts.embedded?.stop();
      log.info('stopped');
      process.exit(0);
    } catch (err) {
      log.error('shutdown failed', errorFields(err));
      process.exit(1);
    }
  };
  // A promise nobody awaited failing is a bug to fix, not a reason to drop every subscriber's socket.
  process.on('unhandledRejection', (err) => log.error('unhandled rejection', errorFields(err)));
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
  // A closed terminal: the service and its Postgres stop as on Ctrl-C.
  process.on('SIGHUP', () => void stop('SIGHUP'));
  stopWhenNpmGone(() => void stop('npm exited'));

  started = (async () => {
    const service = await startParts(config, args.fresh, log, stopping.signal, parts);
    process.stdout.write(`odds service listening on ${service.url} (bound to ${service.bound})\nmetrics and probes on ${service.metricsUrl}\n`);
  })().catch(async (err: unknown) => {
    // Stopped by a signal while starting: the stop that signal began finishes the exit.
    if (stopping.signal.aborted) return;
    log.error(`start failed: ${reason(err)}`);
    await parts.embedded?.stop().catch(() => undefined);
    process.exit(1);
  });
}

void main();
