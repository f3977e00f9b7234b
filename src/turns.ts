/**
 * The per-agent serialization of operations (docs/spec.md §1), the one queue the service keeps
 * beside the charts: XState's mailbox orders events, but an operation spans several of them (its
 * append lands later), so operations take turns here.
 *
 * An operation takes its place when it is called, so a call made from inside a port while another
 * runs (a review channel that selects) waits behind it. It starts at once, in the same call, when
 * the one before it has ended (its result is known); calls settle in the order they were made.
 */
export interface Turns {
  /**
   * Runs `operation` in the agent's turn. `operation` receives `end`, to call as soon as its
   * result is known (the next operation may start then); it is called anyway when it settles.
   */
  take<T>(agentId: string, operation: (end: () => void) => Promise<T>): Promise<T>
  /** Whether a call of the agent has not settled yet. */
  isBusy(agentId: string): boolean
}

interface Queue {
  /** The last operation to take a turn: whether it has ended, and when it does. */
  last: { ended: boolean; ends: Promise<void> } | undefined
  /** When every call made so far has settled. */
  settled: Promise<void>
  /** Calls not settled yet: the queue is forgotten at zero. */
  unsettled: number
}

/** Creates the turns of a service's agents. */
export function createTurns(): Turns {
  const queues = new Map<string, Queue>()
  return {
    isBusy: (agentId) => queues.has(agentId),
    take(agentId, operation) {
      const queue = queues.get(agentId) ?? { last: undefined, settled: Promise.resolve(), unsettled: 0 }
      queues.set(agentId, queue)
      queue.unsettled++
      const previous = queue.last
      let release!: () => void
      const turn = { ended: false, ends: new Promise<void>((resolve) => (release = resolve)) }
      queue.last = turn
      const end = () => {
        turn.ended = true
        release()
      }
      const start = () => {
        try {
          return operation(end)
        } catch (error) {
          return Promise.reject(error)
        }
      }
      // The settling slot is taken before the operation runs: a call it makes re-entrantly (a
      // port that calls the service) settles after it.
      const previousSettled = queue.settled
      let settled!: () => void
      queue.settled = new Promise<void>((resolve) => (settled = resolve))
      const ran = previous === undefined || previous.ended ? start() : previous.ends.then(start)
      ran.then(end, end)
      const result = ran.then(
        (value) => previousSettled.then(() => value),
        (error: unknown) => previousSettled.then(() => Promise.reject(error)),
      )
      void result.then(settled, settled).then(() => {
        if (--queue.unsettled === 0 && queues.get(agentId) === queue) queues.delete(agentId)
      })
      return result
    },
  }
}
