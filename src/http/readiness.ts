import type { Logger } from '../log.js';
import type { Component } from '../lib/component.js';

export interface ReadinessOptions {
  log: Logger;
  /** Why the database is gone for good (the embedded server's restarts ran out): /ready then answers 503. */
  databaseLost?(): string | undefined;
}

/** Why data routes and sockets cannot answer yet, or undefined when they can: what every gated route and handshake asks. */
export interface ReadyGate {
  closed(): string | undefined;
}

/** Why /ready answers 503, or undefined when it answers 200: what the probes ask. */
export interface ReadyProbe {
  notReady(): string | undefined;
}

/**
 * Whether the pod takes traffic: the one owner of starting and draining.
 * Listed last among the components, so it turns ready once everything else
 * runs (the service then logs `ready`) and is the first thing shutdown turns
 * off, taking the pod out of rotation before anything stops.
 */
export class Readiness implements Component, ReadyGate, ReadyProbe {
  readonly name = 'readiness';
  private starting = true;
  private draining = false;

  constructor(private readonly o: ReadinessOptions) {}

  /** Data routes and sockets answer 503 until the read model is loaded; probes and metrics always answer. */
  closed(): string | undefined {
    return this.starting ? 'starting: the read model is not loaded yet' : undefined;
  }

  notReady(): string | undefined {
    return this.draining ? 'draining' : this.closed() ?? this.o.databaseLost?.();
  }

  start(): void {
    this.starting = false;
  }

  stop(): void {
    this.draining = true;
    this.o.log.info('shutdown: readiness off');
  }
}
