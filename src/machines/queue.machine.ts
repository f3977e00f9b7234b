import { createActor, fromTransition, type ActorRefFrom, type AnyActorScope } from 'xstate'
import { PersistentMap } from './persistent-map.js'

/**
 * The agents' queues of operations (docs/spec.md §1): one actor per service, one queue per agent
 * that has a call not settled yet. XState's mailbox orders events, but an operation spans several
 * of them (its append lands later), so operations take turns here.
 *
 * operation:  queued → running → ended → done (leaves the queue: its caller settles)
 *                      running ─────────→ done (its promise settled before it told its end, or
 *                                               its end told a result that is final)
 *
 * An operation takes its place when it is called (`TAKE`), so a call made from inside a port while
 * another runs (a review channel that selects) waits behind it. It runs at once, within the same
 * `send`, when every operation before it has ended (`END`: its result is known); it is `done` when
 * its promise settled (`SETTLED`), and leaves the queue, settling its caller, once every operation
 * before it has left: calls settle in the order they were made. A queue that empties is forgotten.
 * An operation whose result is final when it is known (`end(outcome)`: nothing more is awaited) is
 * `done` at its end: one event per operation besides `TAKE`, not two.
 *
 * The logic is a pure transition over immutable values (a new map and queue per event, the map a
 * `PersistentMap`); its effects, running an operation and settling a caller, are deferred
 * through the actor scope and run once the new state is the actor's, as a machine's actions do.
 * A transition function rather than a machine: every operation sends it two events, and a machine's
 * macrostep costs about 2 µs more per event than this (measured at issue #25): together about half
 * of a quiet step boundary's whole cost (docs/benchmarks.md).
 */

/** How an operation's promise settled: its caller settles the same way. */
export type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown }

/**
 * What an operation does in its turn: `end` says its result is known (the next one may run); with
 * the `outcome`, that this is how its promise settles (the operation is done: no later event).
 */
export type Run = (end: (outcome?: Outcome) => void) => Promise<unknown>

/** One operation in its agent's queue, in one of its states (one shape for all: see `operation`). */
export interface Operation {
  /** The operation's number in its service, in the order of the calls. */
  readonly id: number
  readonly run: Run
  /** Settles the caller's promise (called once, when the operation leaves the queue). */
  readonly settle: (outcome: Outcome) => void
  /**
   * `queued`: waits for the operation before it to end; `running`: runs, its result not known
   * yet; `ended`: its result is known (the next one runs), its promise has not settled yet;
   * `done`: its promise settled (`outcome`), it leaves once every operation before it has.
   */
  readonly state: 'queued' | 'running' | 'ended' | 'done'
  readonly outcome: Outcome | undefined
}

/** `from` in another state (a new value; built field by field, one shape, no spread). */
function operation(from: Pick<Operation, 'id' | 'run' | 'settle'>, state: Operation['state'], outcome?: Outcome): Operation {
  return { id: from.id, run: from.run, settle: from.settle, state, outcome }
}

export interface QueueState {
  /** Per agent with a call not settled yet, its operations in the order of the calls. */
  readonly queues: PersistentMap<readonly Operation[]>
  /** How many operations were taken: the next one's id. */
  readonly taken: number
}

export type QueueEvent =
  /** A call of the agent takes its place in the queue. */
  | { type: 'TAKE'; agentId: string; run: Run; settle: (outcome: Outcome) => void }
  /** The operation's result is known: the next one may run; with `outcome`, it is final (done). */
  | { type: 'END'; agentId: string; id: number; outcome?: Outcome }
  /** The operation's promise settled. */
  | { type: 'SETTLED'; agentId: string; id: number; outcome: Outcome }

type Scope = AnyActorScope

/** Runs the operation (deferred: it runs once its `running` state is the actor's). */
function start(scope: Scope, agentId: string, running: Operation): void {
  const { self } = scope
  scope.defer(() => {
    const { id } = running
    // Whether `end` told the final outcome: the operation is done then, and its promise's settling is no news.
    let told = false
    const end = (outcome?: Outcome) => {
      told = outcome !== undefined
      self.send(told ? { type: 'END', agentId, id, outcome } : { type: 'END', agentId, id })
    }
    let ran: Promise<unknown>
    try {
      ran = Promise.resolve(running.run(end))
    } catch (error) {
      ran = Promise.reject(error)
    }
    ran.then(
      (value: unknown) => {
        if (!told) self.send({ type: 'SETTLED', agentId, id, outcome: { ok: true, value } })
      },
      (error: unknown) => {
        if (!told) self.send({ type: 'SETTLED', agentId, id, outcome: { ok: false, error } })
      },
    )
  })
}

/**
 * The queue after a change: the operations at its head that are done leave (their callers
 * settle, in order), and the first queued one runs when none before it is still running.
 * A caller settles in a microtask, never within the `send` that made it leave: with a synchronous
 * log a whole operation, and one called from inside it, can end within the call that took its
 * turn, and the caller awaiting it must still hear before the one called after it.
 */
function advance(scope: Scope, agentId: string, operations: readonly Operation[]): readonly Operation[] {
  let head = 0
  while (head < operations.length && operations[head]!.state === 'done') {
    const left = operations[head++]!
    scope.defer(() => queueMicrotask(() => left.settle(left.outcome!)))
  }
  const rest = head === 0 ? operations : operations.slice(head)
  const next = rest.findIndex((operation) => operation.state === 'queued' || operation.state === 'running')
  if (next === -1 || rest[next]!.state === 'running') return rest
  const running = operation(rest[next]!, 'running')
  start(scope, agentId, running)
  const changed = rest.slice()
  changed[next] = running
  return changed
}

/** `queues` with the agent's queue replaced (forgotten when it emptied). */
function withQueue(queues: PersistentMap<readonly Operation[]>, agentId: string, operations: readonly Operation[]): PersistentMap<readonly Operation[]> {
  return operations.length === 0 ? queues.delete(agentId) : queues.set(agentId, operations)
}

/** The operation `id` of the queue moved to `state` by `change`, or the queue as it was. */
function moved(operations: readonly Operation[], id: number, change: (operation: Operation) => Operation | undefined): readonly Operation[] | undefined {
  const i = operations.findIndex((operation) => operation.id === id)
  const changed = i === -1 ? undefined : change(operations[i]!)
  if (changed === undefined) return undefined
  const copy = operations.slice()
  copy[i] = changed
  return copy
}

/** The transition of the queues (pure but for the deferred effects). */
export function queueTransition(state: QueueState, event: QueueEvent, scope: Scope): QueueState {
  const { agentId } = event
  const operations = state.queues.get(agentId) ?? []
  let changed: readonly Operation[] | undefined
  switch (event.type) {
    case 'TAKE':
      changed = [...operations, operation({ id: state.taken, run: event.run, settle: event.settle }, 'queued')]
      return { queues: withQueue(state.queues, agentId, advance(scope, agentId, changed)), taken: state.taken + 1 }
    case 'END': {
      const { outcome } = event
      changed = moved(operations, event.id, (o) => (o.state !== 'running' ? undefined : outcome === undefined ? operation(o, 'ended') : operation(o, 'done', outcome)))
      break
    }
    case 'SETTLED':
      changed = moved(operations, event.id, (o) => (o.state === 'running' || o.state === 'ended' ? operation(o, 'done', event.outcome) : undefined))
      break
  }
  return changed === undefined ? state : { queues: withQueue(state.queues, agentId, advance(scope, agentId, changed)), taken: state.taken }
}

/** The queues of one service's agents. */
export const queueLogic = fromTransition(queueTransition, (): QueueState => ({ queues: PersistentMap.empty(), taken: 0 }))

export type QueueActor = ActorRefFrom<typeof queueLogic>

/** Starts the queues of a service. */
export function createQueue(): QueueActor {
  return createActor(queueLogic).start()
}

/**
 * Runs `run` in the agent's turn: it receives `end`, to call as soon as its result is known (the
 * next operation may run then; it ends anyway when its promise settles), with the outcome when
 * that is how its promise settles (the caller may settle then). Resolves or rejects as `run`'s
 * promise did, after every call of the agent made before it has settled.
 */
export function takeTurn<T>(queue: QueueActor, agentId: string, run: (end: (outcome?: Outcome) => void) => Promise<T>): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const settle = (outcome: Outcome) => (outcome.ok ? resolve(outcome.value as T) : reject(outcome.error))
    queue.send({ type: 'TAKE', agentId, run, settle })
  })
}

/** Whether a call of the agent has not settled yet. */
export function isBusy(state: QueueState, agentId: string): boolean {
  return state.queues.has(agentId)
}
