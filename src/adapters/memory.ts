import { checkpointEventProblem, readCheckpoint, type CheckpointStore, type PlanCheckpoint } from '../log/checkpoint.js'
import type { SessionEvent, SessionLog } from '../types.js'

/** Options of `createMemorySessionLog`. */
export interface MemorySessionLogOptions {
  /**
   * The checkpoint the seed events start from (R76): the first of them is the event it ends at,
   * numbered with its seq (and checked against it), the rest follow; attach replays only those.
   * Without it the seed is a whole log, numbered from 1.
   */
  checkpoint?: unknown
  /** The agent the checkpoint was loaded for (`load(agentId)`): needed with a checkpoint, which must be that agent's. */
  agentId?: string
}

/**
 * An in-memory session log: synchronous appends, seq from 1 (or from its checkpoint's), listeners
 * told synchronously. Seeding it with another log's events forks that session (R4).
 * @throws Error `createMemorySessionLog: <problem>` for a checkpoint that cannot be used (another
 *   version, another agent's, one that does not end at the first seed event): load the whole log
 *   instead.
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
    if (typeof options.agentId !== 'string') throw new TypeError('createMemorySessionLog: a checkpoint needs the agentId it was loaded for')
    const read = readCheckpoint(options.checkpoint, options.agentId)
    if ('problem' in read) throw new Error(`createMemorySessionLog: ${read.problem}`)
    checkpoint = read
  }
  const first = checkpoint?.seq ?? 1
  for (const { type, data } of events) stored.push(Object.freeze({ seq: first + stored.length, type, data }))
  const problem = checkpoint && checkpointEventProblem(checkpoint, stored[0])
  if (problem) throw new Error(`createMemorySessionLog: ${problem}`)
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
