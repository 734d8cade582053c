/**
 * A part of the service that runs. The service lists its components in
 * order and lifecycle.ts starts them in that order and stops them in reverse,
 * so each stops while everything it uses still runs. A start or stop that
 * returns nothing has finished: nothing waits a turn of the loop for it.
 */
export interface Component {
  readonly name: string;
  start(): Promise<void> | void;
  stop(): Promise<void> | void;
}

/** A part with a start and stop of its own but no name (the hub's sweep and broadcaster), as a component. */
export class Named implements Component {
  constructor(
    readonly name: string,
    private readonly part: { start?(): void; stop(): void },
  ) {}

  start(): void {
    this.part.start?.();
  }

  stop(): void {
    this.part.stop();
  }
}
