import { Backoff, sleep } from './retry.js';

/**
 * A job that must run to completion again whenever asked, one run at a time:
 * asking while it runs makes it run once more after. A run that throws, or
 * says it is not done, is repeated (a throw after a backoff) until one
 * completes, or until stopped.
 */
export class Repeater {
  private loop: Promise<void> | undefined;
  private again = false;
  private stopped = false;

  constructor(
    /** One run; resolves true when done, false to run again at once. */
    private readonly run: () => Promise<boolean>,
    private readonly failed: (err: unknown) => void,
  ) {}

  request(): Promise<void> {
    this.again = true;
    this.loop ??= this.repeat().finally(() => (this.loop = undefined));
    return this.loop;
  }

  stop(): void {
    this.stopped = true;
  }

  private async repeat(): Promise<void> {
    const backoff = new Backoff(250, 5000);
    while (this.again && !this.stopped) {
      this.again = false;
      try {
        if (!(await this.run())) this.again = true;
      } catch (err) {
        this.failed(err);
        this.again = true;
        await sleep(backoff.next());
      }
    }
  }
}
