/**
 * Where Waybill gets the time. Tests inject a clock they can move, so lease expiry is tested without
 * sleeping. Milliseconds since the epoch, like Date.now(); the store writes epoch seconds.
 */
export interface Clock {
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };

/** A clock that moves only when told to. */
export class ManualClock implements Clock {
  constructor(private ms = Date.now()) {}
  now(): number {
    return this.ms;
  }
  advance(ms: number): void {
    this.ms += ms;
  }
}

export const toSeconds = (ms: number): number => ms / 1000;
