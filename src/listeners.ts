import type pg from 'pg';
import type { Logger } from './log.js';
import type { ListenerHandlers, Listener } from './db/listen.js';
import { goneMarkets, type ModelChange } from './refdata/model.js';
import type { ModelSync, SyncObserver } from './refdata/sync.js';
import type { ReferenceFrames } from './relay/reference-frames.js';
import type { Freshness } from './relay/freshness.js';
import type { OutsideFeeds } from './ingest/outside.js';
import type { Auth, KeyRevocations } from './auth/auth.js';
import type { Hub } from './hub/hub.js';
import type { AuthMetrics } from './metrics/auth.js';
import { KEY_APPLIED } from './auth/key-change.js';
import type { ServiceMetrics } from './metrics/registry.js';
import { MarketStates, type StateMessage } from './hub/states.js';
import type { RecordTaps } from './record/taps.js';
import type { Takeover } from './record/recorder.js';

/*
 * The listeners that join areas no folder may join from below: what the
 * LISTEN connection hears, what each reload of the read model changed, and
 * which sockets a revoked key closes.
 */

export interface NotificationsDeps {
  sync: ModelSync;
  auth: Auth;
  pool: pg.Pool;
  /** Where a key's change is confirmed from: the LISTEN connection itself, which other pods know by its backend pid. */
  listener: Pick<Listener, 'notify'>;
  metrics: ServiceMetrics;
  log: Logger;
}

/** What the LISTEN connection hears: reference keys for the read model, API key changes for auth. */
export class Notifications implements ListenerHandlers {
  constructor(private readonly d: NotificationsDeps) {}

  /** Notifications sent while the listener was away are lost: everything is reloaded. */
  onConnect(): void {
    this.d.sync.reloadAll();
    if (this.d.auth.enabled) void this.d.auth.refresh(this.d.pool, 'all', this.d.log);
  }

  onNotify(key: string): void {
    if (key.startsWith('key:')) this.keyChanged(key.slice(4));
    else this.d.sync.notify(key);
  }

  onDisconnect(): void {
    this.d.metrics.pgErrors.inc({ kind: 'listener_lost' });
  }

  /** A key command waits for every pod to say, from its LISTEN connection, that its auth holds the change. */
  private keyChanged(id: string): void {
    void this.d.auth.refresh(this.d.pool, [id], this.d.log).then((held) => held && this.d.listener.notify(KEY_APPLIED, id));
  }
}

export interface ReferenceChangesDeps {
  frames: ReferenceFrames;
  outside: OutsideFeeds;
  freshness: Freshness;
  metrics: ServiceMetrics;
}

/** What each reload of the read model did: frames for subscribers, deleted markets forgotten, and its metrics. */
export class ReferenceChanges implements SyncObserver {
  constructor(private readonly d: ReferenceChangesDeps) {}

  changes(changes: ModelChange[]): void {
    this.d.frames.changed(changes);
    this.d.outside.forgetGone(changes);
    for (const mid of goneMarkets(changes)) this.d.freshness.forget(mid);
  }

  lag(seconds: number): void {
    this.d.metrics.refreshLag.observe(seconds);
  }

  failed(): void {
    this.d.metrics.pgErrors.inc({ kind: 'refresh' });
  }
}

/**
 * A key revoked or deleted: its sockets on this pod close, each counted, and the markets it fed
 * over REST are stale at once (those it fed over its sockets go stale as they close).
 */
export class Revocations implements KeyRevocations {
  constructor(
    private readonly hub: Hub,
    private readonly freshness: Pick<Freshness, 'revoked'>,
    private readonly metrics: AuthMetrics,
  ) {}

  revoked(keyId: string): void {
    this.freshness.revoked(keyId);
    this.hub.revoke(keyId, this.metrics);
  }
}

/**
 * The broadcaster's store of state frames, each also handed to the record: every `market`,
 * `result` and `freshness` frame this pod publishes passes through it once. When the pod takes the
 * recorder's lease, where every market stands is recorded first.
 */
export class RecordedStates extends MarketStates implements Takeover {
  constructor(private readonly taps: Pick<RecordTaps, 'state'>) {
    super();
  }

  override record(msg: StateMessage): void {
    super.record(msg);
    this.taps.state(msg);
  }

  tookOver(): void {
    for (const msg of this.all()) this.taps.state(msg);
  }
}
