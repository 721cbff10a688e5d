/** Events sent to the control plane, kept once under the sender's id (lib/control/events.ts). Re-exported by index.ts. */

export interface EventRow {
  id: string;
  name: string;
  /** The event's data, as JSON text. */
  dataJson: string;
  /** Epoch seconds, by the store's clock. */
  createdAt: number;
}

export interface EventStore {
  /**
   * Records an event under its id, once: a second send of the same id, name and data is `recorded: false` with
   * the first row, and nothing is written. The same id with another name or data is refused
   * (EventConflictError, naming what differs) and nothing is written.
   */
  recordEmittedEvent(event: { id: string; name: string; dataJson: string }): Promise<{
    recorded: boolean;
    event: EventRow;
  }>;

  getEmittedEvent(id: string): Promise<EventRow | null>;
}
