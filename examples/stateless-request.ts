import {
  createMemorySessionLog,
  createPlanMode,
  type CheckpointStore,
  type PlanAgent,
  type PlanMode,
  type SessionEvent,
  type SessionLog,
} from 'xstate-plan-mode'

/** Your database: each agent's events in seq order. */
export interface EventTable {
  /** The agent's events with a seq above `seq`, in order. */
  after(agentId: string, seq: number): Promise<SessionEvent[]>
  /** Stores one event; rejects when its seq is taken (another writer got there first). */
  insert(agentId: string, event: SessionEvent): Promise<void>
}

/**
 * One request of a stateless host (a serverless function): load the agent's checkpoint and only
 * the events from the one it ends at, serve the request, and let everything go. The service saves a new
 * checkpoint whenever the agent goes idle after 100 events, so the tail stays short.
 */
export async function handleRequest<T>(
  agentId: string,
  table: EventTable,
  checkpoints: CheckpointStore,
  serve: (planMode: PlanMode, agent: PlanAgent) => Promise<T>,
): Promise<T> {
  const session = await loadSession(agentId, table, checkpoints)
  const planMode = createPlanMode({ section: 'Plan mode is on.', checkpoints: { store: checkpoints } })
  try {
    return await serve(planMode, { id: agentId, session })
  } finally {
    await planMode.dispose() // waits for the checkpoint being written, if any
  }
}

/** The agent's log from its checkpoint, or whole when the checkpoint cannot be used. */
async function loadSession(agentId: string, table: EventTable, checkpoints: CheckpointStore): Promise<SessionLog> {
  const checkpoint = await Promise.resolve(checkpoints.load(agentId)).catch(() => undefined)
  let memory: SessionLog
  try {
    // The event the checkpoint ends at, and those after it: the checkpoint is checked against it.
    const from = ((checkpoint as { seq?: number } | undefined)?.seq ?? 1) - 1
    memory = createMemorySessionLog(await table.after(agentId, from), checkpoint === undefined ? {} : { checkpoint, agentId })
  } catch {
    memory = createMemorySessionLog(await table.after(agentId, 0)) // a checkpoint it cannot use: the whole log
  }
  return {
    get events() {
      return memory.events
    },
    checkpoint: memory.checkpoint,
    subscribe: (listener) => memory.subscribe(listener),
    // Stored first, then told: an append is acknowledged only once the database has it.
    async append(type, data) {
      const seq = (memory.events.at(-1)?.seq ?? (memory.checkpoint as { seq: number } | undefined)?.seq ?? 0) + 1
      await table.insert(agentId, { seq, type, data })
      return memory.append(type, data)
    },
  }
}
