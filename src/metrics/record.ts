import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

/** Where a record entry was lost: the log dropped it unread (its bound), the recorder refused it as malformed, or Postgres refused its row. */
export type RecordLoss = 'log' | 'invalid' | 'unsent' | 'refused';

/** What the record's gauges read at scrape: the recorder's lag, and what its log holds. */
export interface RecordGaugeSource {
  lag(): number;
  backlog(): Promise<{ entries: number; bytes: number | undefined }>;
  readonly leading: boolean;
}

/** The record (src/record): what it wrote, what it lost, how far behind it is, and which pod records. */
export class RecordMetrics {
  readonly written: Counter<'table'>;
  readonly lost: Counter<'where'>;
  readonly late: Counter;
  readonly writeSeconds: Histogram;
  readonly failures: Counter;
  readonly leader: Gauge;
  readonly lag: Gauge;
  readonly backlog: Gauge;
  readonly backlogBytes: Gauge;
  readonly appended: Counter;
  private source: RecordGaugeSource | undefined;

  constructor(registry: Registry) {
    const registers = [registry];
    this.written = new Counter({ name: 'odds_record_rows_total', help: 'Rows the recorder wrote, by table (odds, states, ledger, sent)', labelNames: ['table'], registers });
    this.lost = new Counter({
      name: 'odds_record_lost_total', labelNames: ['where'], registers,
      help: 'Entries that never reached the record: dropped unread by the in-process queue past RECORD_QUEUE_MAX (log), refused as malformed (invalid), not handed to the bus while it was down (unsent), or refused by Postgres (refused)',
    });
    this.late = new Counter({
      name: 'odds_record_late_total', registers,
      help: 'Images and state frames written with a time at or before the record\'s complete mark: they reached the recorder more than RECORD_SETTLE_MS behind it (a pod\'s clock behind the recorder\'s by more, or held on the way), and a reader already past that time at the live end does not see them',
    });
    // Every label from zero: an alert on increase() sees the first loss, not a series that appears with it.
    for (const where of ['log', 'unsent', 'invalid', 'refused'] satisfies RecordLoss[]) this.lost.inc({ where }, 0);
    for (const table of ['odds', 'states', 'ledger', 'sent']) this.written.inc({ table }, 0);
    this.appended = new Counter({ name: 'odds_record_appended_total', help: 'Entries this pod handed to the record log', registers });
    this.writeSeconds = new Histogram({
      name: 'odds_record_write_seconds', help: 'One batch written to the record (COPY and commit)', registers,
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10],
    });
    this.failures = new Counter({ name: 'odds_record_write_failures_total', help: 'Batch writes that failed and were retried', registers });
    this.leader = new Gauge({ name: 'odds_record_leader', help: '1 on the one pod that holds the recorder lease and writes the record', registers });
    const self = this;
    this.lag = new Gauge({
      name: 'odds_record_lag_seconds', help: 'Age of the oldest entry taken for writing and not yet written (0 when none waits); on the recording pod', registers,
      collect() {
        this.set(self.source?.lag() ?? 0);
      },
    });
    this.backlogBytes = new Gauge({ name: 'odds_record_backlog_bytes', help: 'Bytes the bus holds for the recorder (BUS=nats); on the recording pod', registers });
    this.backlog = new Gauge({
      name: 'odds_record_backlog_entries', help: 'Entries the log holds for the recorder, not yet taken for writing; on the recording pod', registers,
      async collect() {
        const b = self.source?.leading ? await self.source.backlog().catch(() => undefined) : undefined;
        this.set(b?.entries ?? 0);
        self.backlogBytes.set(b?.bytes ?? 0);
      },
    });
  }

  /** The lag and backlog gauges read the recorder at scrape; on a pod that does not record they say 0. */
  watch(source: RecordGaugeSource): void {
    this.source = source;
  }
}
