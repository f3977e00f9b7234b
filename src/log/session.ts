/**
 * The session log plan mode reads (R1, R76): its events and the port a host gives. They live with
 * the log's readers, which need nothing else; `types.ts` re-exports them with the public types.
 */

/** One event of an agent's append-only session log. `seq` is assigned by the log, +1 per event. */
export interface SessionEvent<Data = unknown> {
  readonly seq: number
  readonly type: string
  readonly data: Data
}

/**
 * An agent's session log: the only durable truth of plan mode (R1).
 * `events` holds the whole loaded log; `append` may be asynchronous (a database);
 * `subscribe` reports every appended event.
 */
export interface SessionLog {
  /**
   * The log's events, seq one after another (§0): the whole log, or, when `checkpoint` is set,
   * any suffix of it that holds the event the checkpoint ends at and every event after it (R76).
   */
  readonly events: readonly SessionEvent[]
  /**
   * The checkpoint the host loaded for this agent (`CheckpointStore.load`), when it loaded only
   * the events from it on; attach then replays only those after it (R76). Checked before it is
   * believed: the agent's, and ending at the log's event at its seq.
   */
  readonly checkpoint?: unknown
  append(type: string, data: unknown): SessionEvent | Promise<SessionEvent>
  subscribe(listener: (event: SessionEvent) => void): () => void
}
