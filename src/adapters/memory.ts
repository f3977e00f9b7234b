import type { SessionEvent, SessionLog } from '../types.js'

/**
 * An in-memory session log: synchronous appends, seq from 1, listeners told synchronously.
 * Seeding it with another log's events forks that session (R4).
 */
export function createMemorySessionLog(
  events: Iterable<{ type: string; data: unknown }> = [],
): SessionLog {
  const stored: SessionEvent[] = []
  const listeners = new Set<(event: SessionEvent) => void>()
  for (const { type, data } of events) stored.push(Object.freeze({ seq: stored.length + 1, type, data }))
  return {
    events: stored,
    append(type, data) {
      const event: SessionEvent = Object.freeze({ seq: stored.length + 1, type, data })
      stored.push(event)
      // A snapshot of the listeners: one that unsubscribes while being told must not skip another.
      for (const listener of [...listeners]) listener(event)
      return event
    },
    subscribe(listener) {
      listeners.add(listener)
      return () => {
        listeners.delete(listener)
      }
    },
  }
}
