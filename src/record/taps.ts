import { randomBytes } from 'node:crypto';
import type { Ordered } from '../odds/book.js';
import type { RecordLog, RecordNote } from '../bus/types.js';

/** This process's name in the record: its start time and randomness, so no two processes share one, restarts included. */
export const newPodName = (at = Date.now()): string => `p${at.toString(36)}${randomBytes(3).toString('hex')}`;

/** A `market`, `result` or `freshness` frame, whole, as published: recorded as JSON so keys this code does not know are kept too. */
export interface StateFrame {
  readonly op: 'market' | 'result' | 'freshness';
  readonly mid: string;
}

/** Who records: the pod holding the recorder's lease. */
export interface Leading {
  readonly leading: boolean;
}

/**
 * What this pod hands the record's log. Every pod hands it the odds images it numbered and its
 * own sockets' ledgers and conflated sends; only the recording pod hands it the state frames it
 * publishes (every pod publishes the same ones), and, when it takes the lease, where every
 * market stands. Never waits: the log drops past its bound and counts.
 */
export class RecordTaps {
  private n = 0;

  constructor(
    private readonly log: RecordLog,
    readonly pod: string,
    private readonly leader: Leading,
    private readonly now: () => number = Date.now,
  ) {}

  /** An image this pod numbered, once. */
  odds(o: Ordered): void {
    this.log.append({ kind: 'odds', o });
  }

  /** A state frame this pod published; recorded only while it is the recorder. */
  state(frame: StateFrame): void {
    if (this.leader.leading) this.note('state', frame as unknown as Record<string, unknown>);
  }

  note(topic: RecordNote['topic'], body: Record<string, unknown>, at = this.now()): void {
    this.log.append({ kind: 'note', note: { topic, src: this.pod, n: ++this.n, at, body } });
  }
}
