import { readCheckpoint, type CheckpointStore, type PlanCheckpoint } from '../log/checkpoint.js'
import type { SessionEvent, SessionLog } from '../types.js'

/** Options of `createMemorySessionLog`. */
export interface MemorySessionLogOptions {
  /**
   * The checkpoint the seed events follow (R76): they are numbered from its seq + 1, and attach
   * replays only them. Without it the seed is a whole log, numbered from 1.
   */
  checkpoint?: unknown
}

/**
 * An in-memory session log: synchronous appends, seq from 1 (or after its checkpoint), listeners
 * told synchronously. Seeding it with another log's events forks that session (R4).
 * @throws Error `createMemorySessionLog: <problem>` for a checkpoint that cannot be used: load
 *   the whole log instead.
 */
export function createMemorySessionLog(
  events: Iterable<{ type: string; data: unknown }> = [],
  options: MemorySessionLogOptions = {},
): SessionLog {
  const stored: SessionEvent[] = []
  const listeners = new Set<(event: SessionEvent) => void>()
  let checkpoint: PlanCheckpoint | undefined
  // A store that answers null for "none" (many do) gives no checkpoint.
  if (options.checkpoint !== undefined && options.checkpoint !== null) {
    const read = readCheckpoint(options.checkpoint)
    if ('problem' in read) throw new Error(`createMemorySessionLog: ${read.problem}`)
    checkpoint = read
  }
  const first = (checkpoint?.seq ?? 0) + 1
  for (const { type, data } of events) stored.push(Object.freeze({ seq: first + stored.length, type, data }))
  return {
    events: stored,
    ...(checkpoint ? { checkpoint } : {}),
    append(type, data) {
      const event: SessionEvent = Object.freeze({ seq: first + stored.length, type, data })
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

/**
 * A checkpoint store in memory (R76): each save replaces the agent's checkpoint with a copy, so
 * a later change to the saved object changes nothing. For tests and single-process hosts.
 */
export function createMemoryCheckpointStore(): CheckpointStore & { readonly saved: ReadonlyMap<string, PlanCheckpoint> } {
  const saved = new Map<string, PlanCheckpoint>()
  return {
    saved,
    load: (agentId) => {
      const checkpoint = saved.get(agentId)
      return checkpoint === undefined ? undefined : structuredClone(checkpoint)
    },
    save: (agentId, checkpoint) => {
      saved.set(agentId, structuredClone(checkpoint))
    },
  }
}
