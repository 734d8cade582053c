/**
 * The stream's framing: one JSON object per line, each line ending in CRLF.
 * A line is held in memory until its end arrives, so its length is capped:
 * a server (or a man in the middle) sending without end cannot grow us
 * without limit.
 */
import { StreamError } from './errors.js';

const LF = 0x0a;
const CR = 0x0d;

export class LineSplitter {
  private parts: Buffer[] = [];
  private held = 0;

  /** @param maxBytes the most bytes a line may hold before its LF, its CR included. */
  constructor(private readonly maxBytes: number) {}

  /**
   * Calls `each` with every line this chunk completes, in order, without its
   * CRLF (empty lines are skipped), then holds the rest. Throws at the first
   * line over the limit, after the lines before it were handed on.
   */
  push(chunk: Buffer, each: (line: string) => void): void {
    let start = 0;
    for (let end = chunk.indexOf(LF); end >= 0; end = chunk.indexOf(LF, start)) {
      this.hold(end - start);
      const line = this.complete(chunk.subarray(start, end));
      start = end + 1;
      if (line.length) each(line);
    }
    this.hold(chunk.length - start);
    if (start < chunk.length) this.parts.push(chunk.subarray(start));
  }

  /** Forgets a partial line: after a reconnect the next byte starts a new one. */
  reset(): void {
    this.parts = [];
    this.held = 0;
  }

  private hold(bytes: number): void {
    if (this.held + bytes > this.maxBytes) {
      const seen = this.held + bytes;
      this.reset();
      throw new StreamError('LINE_TOO_LONG', `the stream sent a line longer than ${this.maxBytes} bytes (${seen} bytes without a line end)`);
    }
    this.held += bytes;
  }

  /** The parts held and `tail` as one line, without its CR. */
  private complete(tail: Buffer): string {
    let line = this.parts.length ? Buffer.concat([...this.parts, tail]) : tail;
    this.reset();
    if (line.length && line[line.length - 1] === CR) line = line.subarray(0, line.length - 1);
    return line.toString('utf8');
  }
}
