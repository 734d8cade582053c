/**
 * Finds a dead peer: the server sends a heartbeat after `hbMs` without any
 * frame, so two intervals without one mean the connection is gone, even when
 * the socket has not noticed (a half-open TCP connection never errors). One
 * timer per connection, moved on only when it fires, so frames cost a store.
 */
export class Silence {
  private last = 0;
  private timer: ReturnType<typeof setTimeout> | undefined;

  constructor(private readonly hbMs: number, private readonly dead: (silentMs: number) => void) {}

  start(): void {
    this.heard();
    this.check(2 * this.hbMs);
  }

  heard(): void {
    this.last = Date.now();
  }

  stop(): void {
    clearTimeout(this.timer);
  }

  private check(inMs: number): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      const silent = Date.now() - this.last;
      if (silent < 2 * this.hbMs) this.check(2 * this.hbMs - silent);
      else this.dead(silent);
    }, inMs);
  }
}
