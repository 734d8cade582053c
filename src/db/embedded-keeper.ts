/**
 * Keeps the embedded Postgres running for as long as the service does. A
 * postmaster that dies (killed, out of memory, a crash) is started again on
 * the same folder and port, so the pool and the LISTEN connection reconnect
 * to the address they already know and the read model reloads: writes work
 * again within seconds. Restarts are bounded, each logged with its reason;
 * once they run out the keeper says so in one line and reports itself failed,
 * which /ready turns into 503.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from '../log.js';
import { Backoff } from '../lib/retry.js';
import type { Postmaster } from './embedded-process.js';

/** Starts a postmaster that calls `died` with the reason if it exits on its own. */
type Launch = (died: (why: string) => void) => Promise<Postmaster>;

interface KeeperLimits {
  /** Restarts tried after one exit before giving up. */
  readonly attempts: number;
  readonly minMs: number;
  readonly maxMs: number;
}

/** About 15 s of tries in all: long enough for the old server's processes to let go of the folder. */
export const RESTARTS: KeeperLimits = { attempts: 6, minMs: 250, maxMs: 8000 };

export class Keeper {
  private current: Postmaster | undefined;
  private failure: string | undefined;
  private restarting: Promise<void> | undefined;
  private readonly stopping = new AbortController();

  /** Without limits it only logs an exit: for a server someone else looks after (a test stopping and starting it). */
  constructor(private readonly launch: Launch, private readonly log: Logger, private readonly limits?: KeeperLimits) {}

  /** The first start: its failure is the caller's, not retried. */
  async start(): Promise<void> {
    this.current = await this.launch((why) => this.died(why));
  }

  get pid(): number | undefined {
    return this.current?.pid;
  }

  /** Why the server is down for good, once restarts ran out; undefined while it runs or is being restarted. */
  get failed(): string | undefined {
    return this.failure;
  }

  async stop(): Promise<void> {
    this.stopping.abort();
    await this.restarting;
    const pm = this.current;
    this.current = undefined;
    await pm?.stop();
  }

  private died(why: string): void {
    this.current = undefined;
    if (this.stopping.signal.aborted) return;
    if (!this.limits) return this.log.warn('embedded postgres exited', { why });
    this.log.warn('embedded postgres exited; restarting it on the same data folder and port', { why });
    this.restarting = this.restart(why, this.limits);
  }

  private async restart(why: string, { attempts, minMs, maxMs }: KeeperLimits): Promise<void> {
    const backoff = new Backoff(minMs, maxMs);
    let last = why;
    for (let attempt = 1; attempt <= attempts; attempt++) {
      const delayMs = Math.round(backoff.next());
      this.log.warn('embedded postgres restart', { attempt, of: attempts, delayMs, because: last });
      try {
        await sleep(delayMs, undefined, { signal: this.stopping.signal });
        const pm = await this.launch((w) => this.died(w));
        if (this.stopping.signal.aborted) return await pm.stop();
        this.current = pm;
        this.log.info('embedded postgres restarted', { attempt, pid: pm.pid });
        return;
      } catch (err) {
        if (this.stopping.signal.aborted) return;
        last = (err as Error).message;
      }
    }
    this.failure = `the embedded Postgres exited and could not be restarted in ${attempts} attempts (last: ${last})`;
    this.log.error(`${this.failure}; writes fail until the service is restarted`);
  }
}
