import type { Logger } from '../log.js';
import type { Component } from '../lib/component.js';
import { sleep } from '../lib/retry.js';
import type { Listeners } from './listeners.js';
import type { Router } from './router.js';

/** The sockets of both socket routes, as the hub holds them. */
export interface OpenSockets {
  /** Subscribers and publishers open now: what the drain waits for. */
  readonly sockets: number;
  /** Publishers stop taking batches, answer those they took, and close. */
  drainPublishers(): Promise<void>;
  /** Every subscriber gets 1001. */
  closeSubscribers(): void;
}

export interface PublicEdgeOptions {
  listeners: Listeners;
  router: Router;
  sockets: OpenSockets;
  /** How long sockets keep their feed while their clients move away (DRAIN_DELAY_MS). */
  drainDelayMs: number;
  log: Logger;
}

/** How often the drain looks whether every socket has gone. */
const DRAIN_POLL_MS = 50;

/**
 * The public port's drain, the first thing shutdown does once the pod is out
 * of rotation: no new connection, requests in flight finish, sockets keep
 * their feed for up to the drain delay while their clients move away (ending
 * as soon as none is left), publishers have every batch they sent answered,
 * and then every subscriber gets 1001. Starts nothing: the listeners bind
 * before the service starts.
 */
export class PublicEdge implements Component {
  readonly name = 'public edge';

  constructor(private readonly o: PublicEdgeOptions) {}

  start(): void {}

  async stop(): Promise<void> {
    const { o } = this;
    o.listeners.closePublic();
    o.log.info('shutdown: listen socket closed');
    await o.router.drain();
    o.log.info('shutdown: in-flight requests finished; draining sockets', { sockets: o.sockets.sockets, drainDelayMs: o.drainDelayMs });
    const end = Date.now() + o.drainDelayMs;
    for (let left = o.drainDelayMs; o.sockets.sockets > 0 && left > 0; left = end - Date.now()) await sleep(Math.min(DRAIN_POLL_MS, left));
    await o.sockets.drainPublishers();
    o.log.info('shutdown: publishers answered and closed');
    o.sockets.closeSubscribers();
    // Requests that came meanwhile on connections kept alive from before finish too (each answer says close).
    await o.router.drain();
    o.log.info('shutdown: sockets closed');
  }
}
