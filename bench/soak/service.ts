/**
 * The service under soak: the real `node dist/src/main.js` in a child process, on a free
 * loopback port, over a database of its own: a fresh `soak_<timestamp>` database on the server
 * of DATABASE_URL (dropped at the end), or the service's embedded Postgres in a temporary folder
 * (removed at the end).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { ROOT } from '../lib/paths.js';
import { log, sleep } from './util.js';
import { freePort } from '../../src/lib/free-port.js';

export interface Database {
  /** Settings for the service's environment. */
  env: Record<string, string>;
  /** Where, for the report (never the URL: it may hold a password). */
  where: string;
  /** Drops the database or removes the folder; also stops an embedded server the service left behind. */
  cleanup(): Promise<void>;
}

function stamp(): string {
  return new Date().toISOString().replace(/\D/g, '').slice(0, 14);
}

export async function prepareDatabase(): Promise<Database> {
  const external = process.env.DATABASE_URL;
  if (external) {
    const name = `soak_${stamp()}`;
    const admin = new pg.Client({ connectionString: external });
    await admin.connect();
    try {
      await admin.query(`CREATE DATABASE ${name}`);
    } finally {
      await admin.end();
    }
    const url = new URL(external);
    url.pathname = '/' + name;
    return {
      env: { DATABASE_URL: url.toString() },
      where: `database ${name} on ${url.host} (DATABASE_URL)`,
      cleanup: async () => {
        const c = new pg.Client({ connectionString: external });
        await c.connect();
        try {
          await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
        } finally {
          await c.end();
        }
      },
    };
  }
  // As root the embedded server runs as the `postgres` user, which must reach its folder.
  const dir = mkdtempSync(join(tmpdir(), 'odds-soak-'));
  chmodSync(dir, 0o755);
  const pgDir = join(dir, 'pg');
  return {
    env: { EMBEDDED_PG_DIR: pgDir },
    where: `embedded Postgres in ${pgDir}`,
    cleanup: async () => {
      await stopLeftoverPostgres(pgDir);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * If the service died without stopping its embedded Postgres, the postmaster is still running:
 * its pid is the first line of postmaster.pid. Stopped by that pid only (smart shutdown, then fast).
 */
async function stopLeftoverPostgres(pgDir: string): Promise<void> {
  const pidFile = join(pgDir, 'postmaster.pid');
  if (!existsSync(pidFile)) return;
  const pid = Number(readFileSync(pidFile, 'utf8').split('\n')[0]);
  if (!Number.isInteger(pid) || pid <= 1) return;
  log(`the embedded Postgres (pid ${pid}) was left running: stopping it`);
  for (const [signal, waitMs] of [['SIGTERM', 5000], ['SIGINT', 10000]] as const) {
    try {
      process.kill(pid, signal);
    } catch {
      return;
    }
    for (let t = 0; t < waitMs; t += 100) {
      if (!existsSync(pidFile)) return;
      await sleep(100);
    }
  }
}

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface ServiceLogs {
  warn: number;
  error: number;
  /** The first warnings and errors, as logged. */
  lines: string[];
}

export class ServiceProcess {
  readonly logs: ServiceLogs = { warn: 0, error: 0, lines: [] };
  /** Set once the process is gone, however it went. */
  exit: Exit | undefined;
  readonly exited: Promise<Exit>;
  private tail = '';

  private constructor(readonly proc: ChildProcess, readonly url: string, readonly port: number, readonly metricsUrl: string) {
    this.exited = new Promise((ok) => {
      if (proc.exitCode !== null || proc.signalCode !== null) ok((this.exit = { code: proc.exitCode, signal: proc.signalCode }));
      else proc.once('exit', (code, signal) => ok((this.exit = { code, signal })));
    });
  }

  get pid(): number {
    return this.proc.pid!;
  }

  /** Starts the service and waits until it listens and `/ready` answers 200. */
  static async start(dbEnv: Record<string, string>, timeoutMs = 180_000): Promise<ServiceProcess> {
    const port = await freePort();
    const metricsPort = await freePort();
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      PORT: String(port),
      METRICS_PORT: String(metricsPort),
      HOST: '127.0.0.1',
      LOG_LEVEL: 'warn',
      LOG_FORMAT: 'json',
      SIMULATOR: 'off',
      DEMO_DATA: 'on',
      AUTH: 'off',
      BUS: 'memory',
      ...dbEnv,
    };
    if (!dbEnv.DATABASE_URL) delete env.DATABASE_URL;
    const proc = spawn(process.execPath, [join(ROOT, 'dist', 'src', 'main.js')], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    const url = `http://127.0.0.1:${port}`;
    const svc = new ServiceProcess(proc, url, port, `http://127.0.0.1:${metricsPort}`);
    let early = '';
    let listening = false;
    const onLine = (line: string): void => {
      if (!listening) early = (early + line + '\n').slice(-20_000);
      if (/listening on http:\/\//.test(line)) listening = true;
      svc.record(line);
    };
    svc.lines(proc.stdout!, onLine);
    svc.lines(proc.stderr!, onLine);

    const until = Date.now() + timeoutMs;
    while (Date.now() < until) {
      if (svc.exit) throw new Error(`the service exited (${svc.exit.code ?? svc.exit.signal}) while starting:\n${early}`);
      if (listening) {
        try {
          const r = await fetch(`${url}/ready`);
          await r.arrayBuffer();
          if (r.status === 200) return svc;
        } catch {
          // not accepting yet
        }
      }
      await sleep(200);
    }
    proc.kill('SIGKILL');
    throw new Error(`the service was not ready within ${timeoutMs} ms:\n${early}`);
  }

  private lines(stream: NodeJS.ReadableStream, each: (line: string) => void): void {
    let buf = '';
    stream.setEncoding('utf8');
    stream.on('data', (chunk: string) => {
      buf += chunk;
      for (let at = buf.indexOf('\n'); at >= 0; at = buf.indexOf('\n')) {
        each(buf.slice(0, at));
        buf = buf.slice(at + 1);
      }
    });
  }

  /** Counts warnings and errors (JSON log lines; anything else on stderr counts as an error). */
  private record(line: string): void {
    // The start lines (where it listens, where its metrics are) are the only ones not logged as JSON.
    if (!line.trim() || /listening on http:\/\/|^metrics and probes on http:\/\//.test(line)) return;
    let level = 'error';
    try {
      level = String((JSON.parse(line) as { level?: unknown }).level ?? 'error');
    } catch {
      // not a log line: a crash trace or a stray write
    }
    if (level === 'warn') this.logs.warn++;
    else if (level === 'error' || level === 'fatal') this.logs.error++;
    else return;
    this.tail = line;
    if (this.logs.lines.length < 40) {
      this.logs.lines.push(line.slice(0, 1000));
      process.stderr.write(`[service ${level}] ${line.slice(0, 400)}\n`);
    }
  }

  get lastLogLine(): string {
    return this.tail;
  }

  /** SIGTERM, then waits for the exit (SIGKILL past `timeoutMs`). */
  async stop(timeoutMs = 45_000): Promise<Exit & { ms: number; killed: boolean }> {
    const t0 = Date.now();
    if (this.exit) return { ...this.exit, ms: 0, killed: false };
    this.proc.kill('SIGTERM');
    let killed = false;
    const timer = setTimeout(() => {
      killed = true;
      this.proc.kill('SIGKILL');
    }, timeoutMs);
    const exit = await this.exited;
    clearTimeout(timer);
    return { ...exit, ms: Date.now() - t0, killed };
  }
}
