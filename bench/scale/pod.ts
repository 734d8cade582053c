/**
 * bench:scale's pod: one service process, or SCALE_SHARDS of them when one process cannot hold the
 * sockets (this machine caps every process at 20,000 open files: past 18,000 sockets the default is
 * ceil(N / 18,000) shards). Every shard runs on the server core, so the pod still has one core; the
 * shards are joined by the NATS bus (a nats-server of the benchmark's own, on the same core, whose
 * CPU is reported apart), the feed reaches one shard's `/ingest` and the bus carries each image to
 * the others, as it does between pods. Its CPU and RSS are the sums over its shards.
 */
import { type Pinning } from '../lib/cores.js';
import { cpuMicros, rssBytes } from '../lib/proc.js';
import { startServer, type Server } from '../lib/server.js';
import { SETTINGS } from './settings.js';

const PROFILE = SETTINGS.profileDir;

/** Where shards meet: a NATS server and a subject prefix of this run's own. */
export interface PodBus {
  url: string;
  prefix: string;
}

export function startService(dbUrl: string, pinning: Pinning, bus?: PodBus): Promise<Server> {
  return startServer({
    name: 'service', args: ['dist/src/main.js'], pinning, nodeFlags: PROFILE ? ['--cpu-prof', `--cpu-prof-dir=${PROFILE}`] : [],
    env: {
      // Every address: the counting clients come from a network namespace (scale/workers.ts).
      DATABASE_URL: dbUrl, PORT: '0', HOST: '0.0.0.0', DEMO_DATA: 'off', SIMULATOR: 'off', LOG_LEVEL: 'warn', LOG_FORMAT: 'json',
      FEED_STALE_MS: '3600000', DRAIN_DELAY_MS: '0', WS_MAX_SOCKETS: '100000', MAX_BODY_BYTES: String(16 * 1024 * 1024),
      ...(bus ? { BUS: 'nats', NATS_URL: bus.url, NATS_PREFIX: bus.prefix } : { BUS: 'memory' }),
    },
  });
}

export class Pod {
  private constructor(readonly shards: Server[]) {}

  /** Shards start one after another, each joining the bus before the next. */
  static async start(dbUrl: string, pinning: Pinning, count: number, bus?: PodBus): Promise<Pod> {
    if (count > 1 && !bus) throw new Error('a pod of several shards needs the NATS bus');
    const shards: Server[] = [];
    try {
      for (let i = 0; i < count; i++) shards.push(await startService(dbUrl, pinning, bus));
    } catch (err) {
      await Promise.all(shards.map((s) => s.stop()));
      throw err;
    }
    return new Pod(shards);
  }

  /** The shard the feed publishes to. */
  get url(): string {
    return this.shards[0].url;
  }

  get ports(): number[] {
    return this.shards.map((s) => s.port);
  }

  get pids(): number[] {
    return this.shards.map((s) => s.pid);
  }

  cpuMicros(): number {
    return this.shards.reduce((a, s) => a + cpuMicros(s.pid), 0);
  }

  rssBytes(): number {
    return this.shards.reduce((a, s) => a + rssBytes(s.pid), 0);
  }

  /** SIGTERM to every shard at once, as a pod's processes get it together. */
  async stop(): Promise<void> {
    await Promise.all(this.shards.map((s) => s.stop()));
  }
}
