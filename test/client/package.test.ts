/**
 * The client package `odds-service-client` (client/) as a user gets it: `npm pack` of it, the
 * tarball installed into an empty project, a small program type-checked against it under the
 * node16, bundler and node10 module resolutions, and that program run against the service,
 * where it gets an image and then a delta into its book.
 */
import t from 'tap';
import { execFile, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { promisify } from 'node:util';
import { postJson, startTestService } from '../helpers/service.js';
import { MovingMarket } from '../helpers/moving.js';
import { wsUrl } from './helpers.js';

const execFileAsync = promisify(execFile);
/** npm, tsc and the program run as a user's would: without the test runner's loaders. */
const ENV = { ...process.env, NODE_OPTIONS: '' };
const run = (file: string, args: string[], options: { cwd?: string; timeout?: number } = {}) => execFileAsync(file, args, { ...options, env: ENV });
const ROOT = new URL('../../../', import.meta.url).pathname;
const PACKAGE = join(ROOT, 'client');
const TSC = join(ROOT, 'node_modules/.bin/tsc');
const MAX_TARBALL = 100 * 1024;
const MAX_INSTALLED = 5 * 1024 * 1024;
/** What a failed `npm install` says when the registry cannot be reached (not the package's fault). */
const OFFLINE = /ENOTFOUND|EAI_AGAIN|ECONNREFUSED|ECONNRESET|ETIMEDOUT|ENETUNREACH|network/;

/** A user's program: it must type-check under every resolution and, once run, print its book. */
const PROGRAM = `import { OddsClient, type OddsMessage, type ServerMessage } from 'odds-service-client';

declare const process: { argv: string[] };
const [url, mid] = process.argv.slice(2);
const client = new OddsClient({ url, format: 'proto' });
let last: ServerMessage['op'] = 'hb';
client.on('message', (m) => (last = m.op));
client.on('odds', (frame: OddsMessage) => {
  console.log(JSON.stringify({ op: last, seq: frame.seq, held: client.book.get(mid) === frame, frame }));
  if (last === 'delta') client.close();
});
client.connect();
const ack = await client.subscribe({ mids: [mid], delta: true });
console.log(JSON.stringify({ op: 'ack', status: ack.status }));

// Never called: had the types not been found (any), this line would not be an error.
export const misuse = () =>
  // @ts-expect-error mids are strings
  client.subscribe({ mids: [1] });
`;

/**
 * Compiler options per resolution; node16 also emits the program that is run. The package's own
 * declarations are checked (skipLibCheck off); TypeScript's lib files are not the package's, and
 * checking them was most of each compile (skipDefaultLibCheck).
 */
const RESOLUTIONS: Record<string, Record<string, unknown>> = {
  node16: { module: 'node16', moduleResolution: 'node16', outDir: 'out' },
  bundler: { module: 'esnext', moduleResolution: 'bundler', noEmit: true },
  node10: { module: 'esnext', moduleResolution: 'node10', noEmit: true },
};

const work = mkdtempSync(join(tmpdir(), 'odds-client-pkg-'));
t.teardown(() => rmSync(work, { recursive: true, force: true }));

// The build (npm run build) made client/dist; packing it again must not rebuild it under other tests' feet.
const packed = await run('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', work], { cwd: PACKAGE });
const [pack] = JSON.parse(packed.stdout) as { filename: string; files: { path: string }[] }[];
const tarball = join(work, pack.filename);

const project = join(work, 'project');
const installed = await (async () => {
  mkdirSync(project);
  writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'probe', private: true, type: 'module' }));
  try {
    await run('npm', ['install', '--no-audit', '--no-fund', tarball], { cwd: project, timeout: 60_000 });
    return undefined;
  } catch (err) {
    const text = String((err as { stderr?: string }).stderr ?? err);
    if (OFFLINE.test(text)) return `the npm registry is unreachable: ${text.split('\n').find((l) => OFFLINE.test(l))}`;
    throw err;
  }
})();

/**
 * The program and a tsconfig per resolution written into the project, then one `tsc -b` of the
 * three, not a tsc each: TypeScript's libs are read once. --verbose names each project as it
 * starts, so a project's errors are the lines between its start and the next's.
 */
async function typeCheck(): Promise<{ code: number; stdout: string }> {
  writeFileSync(join(project, 'program.ts'), PROGRAM);
  for (const [name, options] of Object.entries(RESOLUTIONS)) {
    const compilerOptions = { target: 'ES2022', lib: ['ES2022', 'DOM'], types: [], strict: true, skipLibCheck: false, skipDefaultLibCheck: true, ...options };
    writeFileSync(join(project, `tsconfig.${name}.json`), JSON.stringify({ compilerOptions, files: ['program.ts'] }));
  }
  return run(TSC, ['-b', '--verbose', ...Object.keys(RESOLUTIONS).map((name) => `tsconfig.${name}.json`)], { cwd: project }).then(
    (r) => ({ code: 0, stdout: r.stdout }),
    (err: { code?: number; stdout?: string }) => ({ code: err.code ?? -1, stdout: err.stdout ?? String(err) }),
  );
}
// Before any test starts: tap ends the file's test at the first await after one.
const built = installed === undefined ? await typeCheck() : { code: -1, stdout: '' };

/** A project's errors in the build's output; undefined when it was not built. */
function errorsOf(name: string): string | undefined {
  const lines = built.stdout.split('\n');
  const start = lines.findIndex((l) => l.includes(`Building project '${join(project, `tsconfig.${name}.json`)}'`));
  if (start < 0) return undefined;
  const end = lines.findIndex((l, i) => i > start && / - (Project|Building project) '/.test(l));
  return lines.slice(start + 1, end < 0 ? undefined : end).filter((l) => l.trim()).join('\n');
}

t.test('npm pack: under 100 kB, holding only the built package', async (t) => {
  const size = statSync(tarball).size;
  t.ok(size < MAX_TARBALL, `the tarball is ${(size / 1024).toFixed(1)} kB`);
  const paths = pack.files.map((f) => f.path);
  t.ok(paths.includes('dist/client/index.js') && paths.includes('dist/client/index.d.ts'), 'the entry point and its types');
  t.ok(paths.includes('dist/odds/gen/odds.js'), 'the generated protobuf code');
  t.same(paths.filter((p) => !p.startsWith('dist/')).sort(), ['README.md', 'package.json'], 'nothing but dist/, the README and package.json');
});

if (installed !== undefined) {
  t.test('the installed package (install, type-check, run)', { skip: installed }, async () => undefined);
} else {
  t.test('installed into an empty project, it adds under 5 MB and only protobufjs', async (t) => {
    const { stdout } = await run('du', ['-sk', join(project, 'node_modules')]);
    const bytes = Number(stdout.split('\t')[0]) * 1024;
    t.ok(bytes < MAX_INSTALLED, `node_modules is ${(bytes / 1024 / 1024).toFixed(2)} MB`);
    const lock = JSON.parse(readFileSync(join(project, 'package-lock.json'), 'utf8')) as { packages: Record<string, unknown> };
    t.same(Object.keys(lock.packages).filter((p) => p).sort(), ['node_modules/long', 'node_modules/odds-service-client', 'node_modules/protobufjs']);
  });

  for (const name of Object.keys(RESOLUTIONS)) {
    t.test(`a program type-checks against it under moduleResolution ${name}`, async (t) => {
      t.equal(errorsOf(name), '', 'built, with no errors');
      t.equal(built.code, 0, built.stdout);
    });
  }

  t.test('the program runs against the service: an image, then a delta applied to it', async (t) => {
    const svc = await startTestService(t);
    const market = new MovingMarket('1.320000001', 6, 7);
    const post = async (...data: Record<string, unknown>[]) => {
      const r = await postJson(svc.url, '/api/v1/ingest', { data });
      if (r.status !== 200) throw new Error(`ingest refused: ${r.text}`);
    };
    await post(market.market(), market.next(false));

    // Node 20 has a WebSocket of its own behind this flag: the package needs nothing else.
    const child = spawn(process.execPath, ['--experimental-websocket', '--no-warnings', join(project, 'out/program.js'), wsUrl(svc.url), market.mid], { cwd: project, env: ENV });
    const timer = setTimeout(() => child.kill(), 30_000);
    t.teardown(() => {
      clearTimeout(timer);
      child.kill();
    });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d));
    const lines: { op: string; status?: number; seq?: number; held?: boolean; frame?: Record<string, unknown> }[] = [];
    for await (const line of createInterface({ input: child.stdout })) {
      const out = JSON.parse(line) as (typeof lines)[number];
      lines.push(out);
      if (out.op === 'ack') await post(market.next(false));
    }
    const code = await new Promise((ok) => (child.exitCode !== null ? ok(child.exitCode) : child.once('exit', ok)));
    t.equal(code, 0, `it ended by itself ${stderr}`);
    t.same(lines.find((l) => l.op === 'ack'), { op: 'ack', status: 1 }, 'the subscribe was acked');
    const frames = lines.filter((l) => l.op !== 'ack');
    t.same(frames.map((l) => [l.op, l.seq]), [['odds', 1], ['delta', 2]], 'the image, then the delta');
    t.ok(frames.every((l) => l.held), 'each went into its book');
    const server = svc.book.get(market.mid)!.message();
    const body = (m: Record<string, unknown>) => ({ mid: m.mid, epoch: m.epoch, seq: m.seq, st: m.st, ip: m.ip, r: m.r, tv: m.tv });
    t.strictSame(body(frames[1].frame!), body(server as unknown as Record<string, unknown>), 'its book equals the server\'s image');
  });
}
