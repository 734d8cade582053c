import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type * as Uws from 'uWebSockets.js';

/**
 * Which uWebSockets.js build this process runs. uWS.js is published only on
 * GitHub, so the service carries two npm re-publishes, each pinned exactly:
 *
 * - v20.57 (`@btc-vision/uwebsockets.js`): binaries for Node 20, 22, 24 and 25,
 *   linked against glibc 2.38 or newer (Debian 13, Ubuntu 24.04).
 * - v20.30 (`@trufflesuite/uws-js-unofficial`, an optional dependency the image
 *   leaves out): binaries for Node 16 to 20 on older glibc (Debian 12 has 2.36).
 *   When its binary does not load it gives a pure-JS server instead, which lacks
 *   much of the API the service uses, so that counts as not loading.
 *
 * The newest build that loads natively wins. This runs when the module is first
 * imported, because every route module needs the loaded library: so the choice
 * is read from `UWS_BUILD` here, and config.ts checks the same variable so a
 * bad value still stops the start naming it.
 */
const UWS_BUILDS = ['20.57', '20.30'] as const;
type UwsBuildName = (typeof UWS_BUILDS)[number];

const PACKAGES: Record<UwsBuildName, string> = { '20.57': 'uWebSockets.js-v20.57', '20.30': 'uWebSockets.js' };

interface UwsBuild {
  /** The build in use, or undefined when none loaded natively (see `failure`). */
  readonly name: UwsBuildName | undefined;
  /** Empty when no build loaded: nothing may listen then. */
  readonly lib: typeof Uws;
  readonly native: boolean;
  /** The build `UWS_BUILD` pinned, if any: then only it was tried. */
  readonly pinned: UwsBuildName | undefined;
  /** Why each build that was tried did not load, in one line. */
  readonly failure: string;
}

const require = createRequire(import.meta.url);
const isNative = (lib: typeof Uws): boolean => /\[native code\]/.test(Function.prototype.toString.call(lib.App));

/** The host's glibc, as Node reports it; undefined on musl or another libc. */
export function glibcVersion(): string | undefined {
  const header = (process.report?.getReport() as { header?: { glibcVersionRuntime?: string } } | undefined)?.header;
  return header?.glibcVersionRuntime;
}

function load(wanted: string | undefined): UwsBuild {
  const pinned = wanted && (UWS_BUILDS as readonly string[]).includes(wanted) ? wanted as UwsBuildName : undefined;
  const order: readonly UwsBuildName[] = pinned ? [pinned] : UWS_BUILDS;
  const why: string[] = [];
  for (const name of order) {
    try {
      // v20.30 prints paragraphs when its binary is missing; the service says it in one line of its own.
      const lib = quietly(() => require(PACKAGES[name]) as typeof Uws);
      if (isNative(lib)) return { name, lib, native: true, pinned, failure: why.join('; ') };
      why.push(`v${name} gave its pure-JS fallback instead of a native binary`);
    } catch (err) {
      why.push(`v${name}: ${notInstalled(err, PACKAGES[name]) ? 'not installed' : whyNotLoaded(err, packageDir(PACKAGES[name]))}`);
    }
  }
  return { name: undefined, lib: {} as typeof Uws, native: false, pinned, failure: why.join('; ') };
}

function quietly<T>(f: () => T): T {
  const saved = { log: console.log, warn: console.warn, error: console.error };
  console.log = console.warn = console.error = () => undefined;
  try {
    return f();
  } finally {
    Object.assign(console, saved);
  }
}

/** An optional build a production install left out: its package is missing, not broken. */
const notInstalled = (err: unknown, pkg: string): boolean =>
  (err as { code?: string }).code === 'MODULE_NOT_FOUND' && (err as Error).message.startsWith(`Cannot find module '${pkg}'`);

/** The folder a build's package is installed in, when it is. */
function packageDir(pkg: string): string | undefined {
  try {
    return dirname(require.resolve(pkg));
  } catch {
    return undefined;
  }
}

/**
 * Why a build did not load, in one line naming the file. The loaders wrap what failed in paragraphs
 * of advice: a binary for this Node and platform that is not there (`Cannot find module
 * './uws_linux_x64_115.node'`, then Node's require stack, whose last line names only the loader),
 * named here by its path; or the dynamic linker's complaint, which names the binary itself.
 */
export function whyNotLoaded(err: unknown, dir: string | undefined): string {
  const text = err instanceof Error ? err.message : String(err);
  const missing = /Cannot find module '([^']+)'/.exec(text)?.[1];
  if (missing) return `cannot find ${dir && missing.startsWith('.') ? join(dir, missing) : missing}`;
  const lines = text.split('\n').map((l) => l.trim()).filter((l) => l && l !== 'Require stack:' && !l.startsWith('- '));
  return (lines.at(-1) ?? 'no reason given').replace(/^Error: /, '').slice(0, 300);
}

export const uwsBuild: UwsBuild = load(process.env.UWS_BUILD || undefined);

/** The one line `npm start` and `npm test` print when no build can serve on this host. */
export function noBuildMessage(build: Pick<UwsBuild, 'pinned' | 'failure'> = uwsBuild): string {
  const glibc = glibcVersion();
  const host = `Node ${process.version} (ABI ${process.versions.modules}) with ${glibc ? `glibc ${glibc}` : 'no glibc'}`;
  const advice = 'Node 22 or 24 on a host with glibc 2.38 or newer (Debian 13, Ubuntu 24.04), or Node 20 on an older glibc';
  // A pin hides the other build, which may well load here: the variable is the first thing to undo.
  if (build.pinned) {
    return `UWS_BUILD=${build.pinned} pins a uWebSockets.js build that does not load natively on ${host}: ${build.failure}. `
      + `Unset UWS_BUILD to let the service pick the newest build that loads, or run ${advice}`;
  }
  return `no uWebSockets.js build loads natively on ${host}: ${build.failure}. Run ${advice}`;
}
