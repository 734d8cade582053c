import { readFileSync } from 'node:fs';
import { ConfigError, loadConfig, type Config } from './config.js';
import { createLogger, errorFields, type Logger } from './log.js';
import { startEmbedded, wipeEmbedded, type EmbeddedServer } from './db/embedded.js';
import { noBuildMessage, uwsBuild } from './http/uws.js';
import { startService, type Service } from './service.js';

/** What went wrong, in words: some errors carry only a code, and a rejection may carry nothing. */
function reason(err: unknown): string {
  const { message, code } = (err ?? {}) as { message?: string; code?: string };
  return message || code || (err === undefined ? 'no reason given' : String(err));
}

/** The command line: `--fresh` is the only flag. */
function parseArgs(args: string[], config: Config): { fresh: boolean } {
  const unknown = args.filter((a) => a !== '--fresh');
  if (unknown.length) throw new ConfigError('arguments', `unknown ${unknown.join(' ')}; the only one is --fresh (start from a clean embedded demo)`);
  const fresh = args.includes('--fresh');
  if (fresh && config.databaseUrl) {
    throw new ConfigError('--fresh', 'deletes the embedded Postgres data folder, and DATABASE_URL is set, so there is none to delete; clear that database yourself, or unset DATABASE_URL');
  }
  return { fresh };
}

/** Files the process keeps beside its sockets: Postgres, NATS, publishers, logs, the event loop's own. */
const OWN_FILES = 1024;

/**
 * Node raises its soft open-file limit to the hard one as it starts. In a silent reconnect storm
 * the process holds each vanished client's dead socket beside its new one until the idle timeout
 * (docs/storms.md), so a full pod needs files for twice WS_MAX_SOCKETS: short of that, accept()
 * fails and new handshakes wait unanswered in the kernel until dead sockets are reaped (measured
 * at 12 s). Only Linux says the limit in /proc; elsewhere nothing is checked.
 */
function checkOpenFiles(config: Config, log: Logger): void {
  let limit: number;
  try {
    const line = /^Max open files\s+(\d+|unlimited)/m.exec(readFileSync('/proc/self/limits', 'utf8'))?.[1];
    if (!line || line === 'unlimited') return;
    limit = Number(line);
  } catch {
    return;
  }
  const needs = 2 * config.wsMaxSockets + OWN_FILES;
  if (limit < needs) {
    log.warn('the open-file limit is under what a reconnect storm of a full pod needs', {
      limit, needs, wsMaxSockets: config.wsMaxSockets,
      remedy: `raise the limit to ${needs} (ulimit -n, systemd LimitNOFILE, the container runtime's nofile) or set WS_MAX_SOCKETS to at most ${Math.max(1, Math.floor((limit - OWN_FILES) / 2))}`,
    });
  }
}

async function main(): Promise<void> {
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
  if (!uwsBuild.native) {
    // Only v20.30 has a pure-JS fallback, and only when it was among the builds tried.
    if (!config.allowUwsFallback || !uwsBuild.hasFallback) {
      process.stderr.write(`cannot start: ${noBuildMessage()}\n`);
      process.exit(1);
    }
    log.warn('RUNNING ON THE PURE-JS uWebSockets.js FALLBACK: expect a fraction of the normal throughput', { why: uwsBuild.failure });
  }
  checkOpenFiles(config, log);
  log.info('starting', {
    node: process.version, uws: uwsBuild.native ? uwsBuild.name : 'fallback', port: config.port, database: config.databaseUrl ? 'external' : 'embedded', demoData: config.demoData, simulator: config.simulator,
  });

  let embedded: EmbeddedServer | undefined;
  let service: Service | undefined;
  let stopping = false;
  const stop = async (signal: string): Promise<void> => {
    if (stopping) return;
    stopping = true;
    log.info('shutting down', { signal, drainDelayMs: config.drainDelayMs, timeoutMs: config.shutdownTimeoutMs });
    setTimeout(() => {
      log.error('shutdown did not finish in time; exiting', { timeoutMs: config.shutdownTimeoutMs });
      process.exit(1);
    }, config.shutdownTimeoutMs).unref();
    try {
      await service?.close();
      await embedded?.stop();
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

  try {
    if (!config.databaseUrl) {
      if (args.fresh) await wipeEmbedded(config.embeddedPgDir, log);
      embedded = await startEmbedded(config.embeddedPgDir, config.embeddedPgPort, log, { kind: 'service', command: 'npm start', stopsOnSignal: true, restarts: true });
    }
    service = await startService(config, config.databaseUrl ?? embedded!.url, log, { databaseLost: () => embedded?.failed() });
    process.stdout.write(`odds service listening on ${service.url} (bound to ${service.bound})\nmetrics and probes on ${service.metricsUrl}\n`);
  } catch (err) {
    log.error(`start failed: ${reason(err)}`);
    await embedded?.stop().catch(() => undefined);
    process.exit(1);
  }
}

void main();
