/**
 * `npm run watch -- [options] <mid>...`: subscribes to markets on the odds WebSocket and prints
 * every frame as one line, for eyeballing the live feed during development.
 */
import { pathToFileURL } from 'node:url';
import { parseArgs as parseOptions } from 'node:util';
import WebSocket from 'ws';
import { decodeServerJson, decodeServerProto } from '../odds/codec.js';
import { encodeClientProto } from '../odds/client-codec.js';
import { HEARTBEAT, parseHeartbeat, type ClientMessage, type PriceSize, type ServerMessage } from '../odds/messages.js';

export const USAGE = `usage: npm run watch -- [--url ws://127.0.0.1:8080/ws] [--format json|proto] [--hb 5000] [--raw] <mid>...
  --url     odds WebSocket endpoint (default ws://127.0.0.1:8080/ws)
  --format  wire format: json (default) or proto
  --hb      heartbeat after this many ms of silence, 500 to 30000
  --raw     print each decoded message as JSON instead of a summary line`;

export interface WatchOptions {
  url: string;
  format: 'json' | 'proto';
  hb?: number;
  raw: boolean;
  mids: string[];
}

/** A command line the CLI cannot run; main prints it with the usage and exits 2. */
export class UsageError extends Error {}

export function parseArgs(argv: string[]): WatchOptions {
  let parsed;
  try {
    parsed = parseOptions({
      args: argv, allowPositionals: true, strict: true,
      options: { url: { type: 'string' }, format: { type: 'string' }, hb: { type: 'string' }, raw: { type: 'boolean' } },
    });
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  const { values, positionals } = parsed;
  const format = values.format ?? 'json';
  if (format !== 'json' && format !== 'proto') throw new UsageError(`--format must be json or proto, got ${format}`);
  let hb: number | undefined;
  if (values.hb !== undefined) {
    hb = parseHeartbeat(values.hb);
    if (hb === undefined) throw new UsageError(`--hb must be a whole number from ${HEARTBEAT.min} to ${HEARTBEAT.max}, got ${values.hb}`);
  }
  const url = values.url ?? 'ws://127.0.0.1:8080/ws';
  if (!/^wss?:\/\//.test(url)) throw new UsageError(`--url must be a ws:// or wss:// URL, got ${url}`);
  if (positionals.length === 0) throw new UsageError('give at least one market ID');
  return { url, format, hb, raw: values.raw ?? false, mids: positionals };
}

const pad = (n: number, w = 2) => String(n).padStart(w, '0');

/** Local wall-clock time with milliseconds: frames arrive many per second. */
export function clock(ms: number): string {
  const d = new Date(ms);
  return `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}.${pad(d.getMilliseconds(), 3)}`;
}

const best = (levels: PriceSize[]) => (levels.length ? `${levels[0][0].toFixed(2)}@${levels[0][1].toFixed(2)}` : '-');

/** One line per frame; `now` is the receive time, passed in so the function stays pure. */
export function formatFrame(msg: ServerMessage, raw: boolean, now = Date.now()): string {
  if (raw) return JSON.stringify(msg);
  const at = clock(now);
  switch (msg.op) {
    case 'odds': {
      const flags = `${msg.st}${msg.ip ? ' ip' : ''}${msg.con ? ' con' : ''}`;
      const runners = msg.r.map((r) => `${r.rid}${r.st === 'ACTIVE' ? '' : ` ${r.st}`} back ${best(r.b)} lay ${best(r.l)}`);
      return `${at} ${msg.mid} seq=${msg.seq} ${flags}  ${runners.join(' | ')}`;
    }
    case 'ack': return `${at} ack id=${msg.id} ${msg.status === 1 ? 'ok' : 'REFUSED'} ${msg.message}`;
    case 'market': return `${at} market ${msg.mid} s=${msg.s} go=${msg.go} rt=${msg.rt}`;
    case 'result': return `${at} result ${msg.mid} mt=${msg.mt} res=${msg.res} rt=${msg.rt} ia=${msg.ia}`;
    case 'unsubscribed': return `${at} unsubscribed ${msg.mids.join(',')}`;
    case 'hb': return `${at} hb`;
    case 'feed': return `${at} feed ${msg.status}`;
  }
}

function main(argv: string[]): void {
  // `npm run watch -- 1.1 | head` closes our stdout: that is the user being done, not an error.
  process.stdout.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code === 'EPIPE') process.exit(0);
    throw err;
  });
  let opts: WatchOptions;
  try {
    opts = parseArgs(argv);
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    process.stderr.write(`watch: ${err.message}\n${USAGE}\n`);
    process.exitCode = 2;
    return;
  }
  const url = new URL(opts.url);
  if (opts.hb !== undefined) url.searchParams.set('hb', String(opts.hb));
  const ws = new WebSocket(url, `odds.v1.${opts.format}`);
  let opened = false;
  let stopping = false;
  let failure: string | undefined;

  ws.on('open', () => {
    opened = true;
    const sub: ClientMessage = { op: 'subscribe', id: 1, mids: opts.mids };
    ws.send(opts.format === 'proto' ? encodeClientProto(sub) : JSON.stringify(sub));
  });
  ws.on('message', (data, isBinary) => {
    const buf = Buffer.isBuffer(data) ? data : Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data);
    try {
      const msg = isBinary ? decodeServerProto(buf) : decodeServerJson(buf.toString('utf8'));
      process.stdout.write(formatFrame(msg, opts.raw) + '\n');
    } catch (err) {
      // One bad frame is worth reporting, not worth dropping the whole session over.
      process.stderr.write(`watch: undecodable ${isBinary ? 'binary' : 'text'} frame: ${(err as Error).message}\n`);
    }
  });
  // ws follows every 'error' with 'close', so the exit decision is made there alone.
  ws.on('error', (err) => {
    failure ??= opened ? `connection error: ${err.message}` : `cannot connect to ${url.href}: ${err.message}`;
  });
  ws.on('close', (code, reason) => {
    if (stopping) return;
    process.stderr.write(`watch: ${failure ?? `connection closed unexpectedly: code ${code} reason "${reason.toString()}"`}\n`);
    process.exitCode = 1;
  });
  process.on('SIGINT', () => {
    stopping = true;
    process.exitCode = 0;
    if (ws.readyState === WebSocket.OPEN) ws.close(1000, 'client quit');
    else ws.terminate();
    // A server that never answers the close frame must not keep the user waiting.
    setTimeout(() => process.exit(0), 2000).unref();
  });
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) main(process.argv.slice(2));
