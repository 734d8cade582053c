import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { ConfigError } from '../config.js';

/** A command line the tool cannot run: said with the usage, exit 2. */
export class UsageError extends Error {}

interface CommandLine {
  readonly help: boolean;
  readonly options: Readonly<Record<string, string | undefined>>;
  /** The given `--name` switches, true when present. */
  readonly flags: Readonly<Record<string, boolean>>;
  readonly positionals: readonly string[];
}

/** The tools' one parser: strict, the given `--name VALUE` options and `--name` switches, positionals, and -h/--help. */
export function parseCommandLine(argv: string[], names: readonly string[] = [], switches: readonly string[] = []): CommandLine {
  const options = Object.fromEntries([
    ...names.map((n) => [n, { type: 'string' as const }]),
    ...switches.map((n) => [n, { type: 'boolean' as const }]),
  ]);
  let parsed;
  try {
    parsed = parseArgs({ args: argv, allowPositionals: true, strict: true, options: { ...options, help: { type: 'boolean', short: 'h' } } });
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  const { help, ...values } = parsed.values as Record<string, string | boolean | undefined>;
  const flags = Object.fromEntries(switches.map((n) => [n, values[n] === true]));
  for (const n of switches) delete values[n];
  return { help: help === true, options: values as Record<string, string | undefined>, flags, positionals: parsed.positionals };
}

/** Says why a tool could not begin (bad usage or setting) and returns its exit code, 2; anything else is rethrown. */
export function refuseStart(tool: string, usage: string, err: unknown): 2 {
  if (err instanceof UsageError) process.stderr.write(`${tool}: ${err.message}\n${usage}\n`);
  else if (err instanceof ConfigError) process.stderr.write(`configuration error: ${err.message}\n`);
  else throw err;
  return 2;
}

/**
 * A secret (a credential or API key) from, in this order: `--NAME VALUE`, `--NAME-file FILE`, the
 * variable ENV, or the file named by the variable ENV_FILE (a mounted Secret); a file's content is
 * trimmed. Arguments show in the process list to every user of the host; variables and files do not.
 */
export function secret(options: Readonly<Record<string, string | undefined>>, name: string, env: string): string | undefined {
  const fromFile = (file: string, what: string) => {
    let text: string;
    try {
      text = readFileSync(file, 'utf8').trim();
    } catch (err) {
      throw new UsageError(`${what} ${file}: ${(err as Error).message}`);
    }
    if (!text) throw new UsageError(`${what} ${file} is empty`);
    return text;
  };
  const given = options[name];
  if (given !== undefined) {
    if (!given) throw new UsageError(`--${name} must not be empty`);
    return given;
  }
  if (options[`${name}-file`] !== undefined) return fromFile(options[`${name}-file`]!, `--${name}-file`);
  if (process.env[env]) return process.env[env];
  if (process.env[`${env}_FILE`]) return fromFile(process.env[`${env}_FILE`]!, `${env}_FILE`);
  return undefined;
}

/** A whole number option from `min` to `max`, or undefined when not given. */
export function wholeNumber(value: string | undefined, option: string, min: number, max: number): number | undefined {
  if (value === undefined) return undefined;
  const n = /^\d{1,16}$/.test(value) ? Number(value) : NaN;
  if (!(n >= min && n <= max)) throw new UsageError(`${option} must be a whole number from ${min} to ${max}, got ${value}`);
  return n;
}

/** A HOST the service listens on that is no address to dial (every interface) is reached on loopback. */
const DIAL: Readonly<Record<string, string>> = { '0.0.0.0': '127.0.0.1', '::': '::1', '[::]': '::1' };

/**
 * The service's socket for a tool: `--url` if given, else the variable URL, else HOST and PORT as
 * `npm start` reads them (127.0.0.1 and 8080 when unset; every interface is dialled on loopback).
 * Either form of its address is taken: `http(s)://HOST:PORT` (as `npm start` prints it, given the
 * socket's `path`) or the socket's own `ws(s)://` URL.
 */
export function serviceUrl(given: string | undefined, env: NodeJS.ProcessEnv, path: '/ws' | '/ingest'): string {
  const [name, raw] = given !== undefined ? ['--url', given] : ['URL', env.URL || undefined];
  if (raw === undefined) {
    const host = DIAL[env.HOST ?? ''] ?? (env.HOST || '127.0.0.1');
    const port = env.PORT || '8080';
    if (!/^\d{1,5}$/.test(port) || Number(port) > 65535) throw new UsageError(`PORT must be the service's port, a whole number from 0 to 65535, got ${port}`);
    return serviceUrl(`ws://${host.includes(':') && !host.startsWith('[') ? `[${host}]` : host}:${port}${path}`, {}, path);
  }
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new UsageError(`${name} must be the service's address (http://HOST:PORT) or its socket (ws://HOST:PORT${path}), got ${raw}`);
  }
  if (!/^(http|ws)s?:$/.test(url.protocol) || !url.host) throw new UsageError(`${name} must be an http(s):// or ws(s):// address, got ${raw}`);
  url.protocol = url.protocol.replace('http', 'ws');
  if (url.pathname === '/') url.pathname = path;
  return url.toString();
}
