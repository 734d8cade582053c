/**
 * The bounds a publisher connection keeps, as the service announces them in the `/ingest`
 * handshake's response headers (docs/ingest.md#what-a-connection-may-hold): written by the
 * route from the service's configuration, read by the project's publishers, so a publisher
 * sizes its batches and its pipeline by the service it talks to, not by a copy of the defaults.
 */
export interface IngestLimits {
  /** Batches one connection may have unanswered. */
  readonly maxInFlight: number;
  /** Their bytes on the wire, per connection: what the connection's bound holds once read, at most. */
  readonly queueBytes: number;
  /** The same per API key, all its connections and REST posts together. */
  readonly keyQueueBytes: number;
  /** Items a batch may hold. */
  readonly maxItems: number;
  /** Bytes one message (one batch) may hold: a larger one closes the socket. */
  readonly maxMessageBytes: number;
}

/** Each bound's response header. */
export const LIMIT_HEADERS: Readonly<Record<keyof IngestLimits, string>> = {
  maxInFlight: 'x-ingest-max-in-flight',
  queueBytes: 'x-ingest-queue-bytes',
  keyQueueBytes: 'x-ingest-key-queue-bytes',
  maxItems: 'x-ingest-max-items',
  maxMessageBytes: 'x-ingest-max-message-bytes',
};

const KEYS = Object.keys(LIMIT_HEADERS) as (keyof IngestLimits)[];

/** The headers announcing `limits`, as [name, value] pairs. */
export function limitHeaders(limits: IngestLimits): [string, string][] {
  return KEYS.map((k) => [LIMIT_HEADERS[k], String(limits[k])]);
}

/**
 * The limits a handshake's headers announce (`header` reads one by its lower-case name), or
 * undefined when any is missing or not a positive whole number: a service that says nothing.
 */
export function readLimits(header: (name: string) => string | undefined): IngestLimits | undefined {
  const out: Partial<Record<keyof IngestLimits, number>> = {};
  for (const k of KEYS) {
    const raw = header(LIMIT_HEADERS[k]);
    if (raw === undefined || !/^[1-9]\d{0,14}$/.test(raw)) return undefined;
    out[k] = Number(raw);
  }
  return out as IngestLimits;
}
