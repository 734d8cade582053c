import type { LogLevel } from './config.js';

/**
 * One line per notable event: JSON for machines (the default off a TTY), a
 * short readable form for a developer's terminal. Level filtering is a number
 * compare so disabled debug calls cost next to nothing.
 */
const RANK: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

type Fields = Record<string, unknown>;

export interface Logger {
  debug(msg: string, fields?: Fields): void;
  info(msg: string, fields?: Fields): void;
  warn(msg: string, fields?: Fields): void;
  error(msg: string, fields?: Fields): void;
}

export function createLogger(level: LogLevel, pretty: boolean, out: (line: string) => void = (l) => process.stdout.write(l)): Logger {
  const min = RANK[level];
  const emit = (lvl: LogLevel, msg: string, fields?: Fields): void => {
    if (RANK[lvl] < min) return;
    if (pretty) {
      const extra = fields ? ' ' + Object.entries(fields).map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`).join(' ') : '';
      out(`${new Date().toISOString()} ${lvl.toUpperCase().padEnd(5)} ${msg}${extra}\n`);
    } else {
      out(JSON.stringify({ time: new Date().toISOString(), level: lvl, msg, ...fields }) + '\n');
    }
  };
  return {
    debug: (m, f) => emit('debug', m, f),
    info: (m, f) => emit('info', m, f),
    warn: (m, f) => emit('warn', m, f),
    error: (m, f) => emit('error', m, f),
  };
}

export function errorFields(err: unknown): Fields {
  if (err instanceof Error) return { err: err.message, code: (err as { code?: unknown }).code };
  return { err: String(err) };
}
