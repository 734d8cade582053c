/**
 * `npm run replay -- FILE... [--speed N|max] [--url URL] [--key KEY] [--catalogue FILE]`:
 * publishes recorded Betfair stream files through `/ingest` (src/exchange). Bad lines are
 * reported on stderr and counted; a refused batch stops the replay with the service's message.
 * Exit code 0 when every line was published, 1 when any was refused or the service refused a
 * batch, 2 for bad usage or unreadable files.
 */
import { readFile } from 'node:fs/promises';
import { Catalogue } from '../exchange/catalogue.js';
import { expand } from '../exchange/files.js';
import { Publisher, PublishError } from '../exchange/publisher.js';
import { newStats, replay, type ReplayStats } from '../exchange/replay.js';
import { Translator } from '../exchange/translate.js';
import { parseCommandLine, refuseStart, UsageError } from './args.js';
import { runsAsTool } from './fresh.js';

const USAGE = `usage: npm run replay -- FILE|FOLDER... [--speed N|max] [--url URL] [--key KEY] [--catalogue FILE]
  FILE        Betfair stream recordings, one message a line: plain, .gz or .bz2; folders are read whole
  --speed     N times the recorded pace (default 1), or max: as fast as the service acks
  --url       the service's publisher socket (default ws://127.0.0.1:8080/ingest)
  --key       API key with the publisher role, sent in the x-api-key header (needed with AUTH=on)
  --catalogue a saved listMarketCatalogue answer (JSON): names and competitions the stream lacks`;

interface ReplayArgs {
  paths: string[];
  speed: number | 'max';
  url: string;
  key?: string;
  catalogue?: string;
}

/** Why a path cannot be read, in words rather than the system's codes. */
const UNREADABLE: Readonly<Record<string, string>> = {
  ENOENT: 'no such file or folder', EACCES: 'permission denied', ENOTDIR: 'a part of the path is not a folder', ELOOP: 'too many symbolic links',
};

/** Problems shown on stderr; the rest are counted only, so a damaged file cannot flood a terminal. */
const SHOWN_PROBLEMS = 100;
const MAX_SPEED = 1_000_000;

export function parseArgs(argv: string[]): ReplayArgs | 'help' {
  const line = parseCommandLine(argv, ['speed', 'url', 'key', 'catalogue']);
  if (line.help) return 'help';
  const { speed = '1', url = 'ws://127.0.0.1:8080/ingest', key, catalogue } = line.options;
  if (!line.positionals.length) throw new UsageError('give at least one file or folder');
  const n = /^\d+(\.\d+)?$/.test(speed) ? Number(speed) : NaN;
  if (speed !== 'max' && !(n > 0 && n <= MAX_SPEED)) throw new UsageError(`--speed must be a number above 0 and at most ${MAX_SPEED}, or max; got ${speed}`);
  if (!/^wss?:\/\/[^/]/.test(url)) throw new UsageError(`--url must be a ws:// or wss:// URL, got ${url}`);
  if (key !== undefined && !key) throw new UsageError('--key must not be empty');
  return { paths: [...line.positionals], speed: speed === 'max' ? 'max' : n, url, key, catalogue };
}

export async function loadCatalogue(file: string): Promise<Catalogue> {
  let json: unknown;
  try {
    json = JSON.parse(await readFile(file, 'utf8'));
  } catch (err) {
    throw new UsageError(`--catalogue ${file}: ${(err as Error).message}`);
  }
  const catalogue = Catalogue.parse(json);
  if (typeof catalogue === 'string') throw new UsageError(`--catalogue ${file}: ${catalogue}`);
  return catalogue;
}

const clock = (pt: number | undefined) => (pt === undefined ? '-' : new Date(pt).toISOString().replace('T', ' ').slice(0, 19));

/** What was read and sent; bad lines are the recording's, apart from a batch the service refused (said before it). */
function summary(stats: ReplayStats, markets: number, seconds: number): string {
  return `${stats.messages} messages, ${markets} markets, ${stats.images} images, ${stats.refused} bad lines, ${seconds.toFixed(2)} s`;
}

async function main(argv: string[]): Promise<number> {
  let args: ReplayArgs | 'help';
  let files: string[];
  let catalogue: Catalogue | undefined;
  try {
    args = parseArgs(argv);
    if (args === 'help') {
      process.stdout.write(`${USAGE}\n`);
      return 0;
    }
    files = await expand(args.paths).catch((err: NodeJS.ErrnoException) => {
      throw new UsageError(`cannot read ${err.path ?? 'a file'}: ${UNREADABLE[err.code ?? ''] ?? err.message}`);
    });
    if (args.catalogue) catalogue = await loadCatalogue(args.catalogue);
  } catch (err) {
    return refuseStart('replay', USAGE, err);
  }
  let shown = 0;
  const problem = (text: string) => {
    shown++;
    if (shown <= SHOWN_PROBLEMS) process.stderr.write(`replay: ${text}\n`);
    else if (shown === SHOWN_PROBLEMS + 1) process.stderr.write(`replay: more problems: counted in the summary, not shown\n`);
  };
  let publisher: Publisher;
  try {
    publisher = await Publisher.connect({ url: args.url, key: args.key });
  } catch (err) {
    process.stderr.write(`replay: ${(err as Error).message}\n`);
    return 1;
  }
  const translator = new Translator({ catalogue });
  const stats = newStats();
  const started = performance.now();
  const seconds = () => (performance.now() - started) / 1000;
  // Progress only where someone watches it; piped output gets the summary alone.
  const progress = process.stderr.isTTY
    ? setInterval(() => process.stderr.write(`\r${stats.messages} messages  ${translator.marketsSeen} markets  ${clock(stats.clock)}  ${Math.round(stats.messages / seconds())} msg/s   `), 500)
    : undefined;
  let failed = false;
  try {
    await replay({ files, speed: args.speed, translator, publisher, stats, problem });
  } catch (err) {
    if (!(err instanceof PublishError)) throw err;
    failed = true;
    process.stderr.write(`${progress ? '\n' : ''}replay: stopped: ${err.message}\n`);
  } finally {
    clearInterval(progress);
    await publisher.close();
  }
  if (progress && !failed) process.stderr.write('\n');
  process.stdout.write(`${summary(stats, translator.marketsSeen, seconds())}\n`);
  return failed || stats.refused ? 1 : 0;
}

if (runsAsTool(import.meta.url)) {
  main(process.argv.slice(2)).then((code) => (process.exitCode = code), (err: unknown) => {
    process.stderr.write(`replay: ${(err as Error).stack ?? String(err)}\n`);
    process.exitCode = 1;
  });
}
