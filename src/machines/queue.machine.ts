import { createActor, fromTransition, type ActorRefFrom, type AnyActorScope } from 'xstate'
import { PersistentMap } from './persistent-map.js'

/**
 * The agents' queues of operations (docs/spec.md §1): one chart per service, one queue per agent
 * that has a call waiting, or a call that did not settle within the call that made it. XState's
 * mailbox orders events, but an operation spans several of them (its append lands later), so
 * operations take turns here.
 *
 * operation:  (in its call) → queued → running → ended → done (leaves the queue: its caller settles)
 *                                      running ─────────→ done (its promise settled before it told
 *                                                               its end, or its end told a result
 *                                                               that is final)
 *
 * An operation of an agent with nothing under way runs at once, within its call, and the queue
 * only hears of it when someone must wait for it or learn how it settles: a call of the same agent
 * made from inside it (a port that calls the service) or the agents' registry asking who is busy
 * (R77), or its own return before its result was final (an append that lands later). Then it
 * takes its place (`TAKE`) as it is at that moment, `running` or `ended`, at the head of its
 * agent's queue. So an operation that the chart settles within its send never costs the queue an
 * event, and every operation that must wait still waits in it: one path, entered at whichever
 * point the operation first needs the queue.
 *
 * A call made while its agent has an operation under way takes its place when it is called
 * (`TAKE`, `queued`). It runs, within the same `send`, when every operation before it has ended
 * (`END`: its result is known); it is `done` when its promise settled (`SETTLED`), and leaves
 * the queue, settling its caller, once every operation before it has left: calls settle in the
 * order they were made. A queue that empties is forgotten. An operation whose result is final
 * when it is known (`end(outcome)`: nothing more is awaited) is `done` at its end.
 *
 * The logic is a pure transition over immutable values (a new map and queue per event, the map a
 * `PersistentMap`); its effects, running an operation and settling a caller, are deferred
 * through the actor scope and run once the new state is the actor's, as a machine's actions do.
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
  /** Per agent with an operation under way that the queue has heard of, its operations in the order of the calls. */
  readonly queues: PersistentMap<readonly Operation[]>
}

export type QueueEvent =
  /**
   * A call of the agent takes its place in the queue: `queued` when it is called, or, with
   * `state`, an operation that began within its call, as it is when the queue first needs to hold
   * it: `running`, or `ended` (its result known).
   */
  | { type: 'TAKE'; agentId: string; id: number; run: Run; settle: (outcome: Outcome) => void; state?: 'running' | 'ended' }
  /** The operation's result is known: the next one may run; with `outcome`, it is final (done). */
  | { type: 'END'; agentId: string; id: number; outcome?: Outcome }
  /** The operation's promise settled. */
  | { type: 'SETTLED'; agentId: string; id: number; outcome: Outcome }

type Scope = AnyActorScope

/** What a running operation tells of itself: its end (with the outcome when final), or how its promise settled. */
type Tell = (type: 'END' | 'SETTLED', outcome?: Outcome) => void

/**
 * Runs an operation, telling its end and how its promise settled (unless its end told the final
 * outcome: then its promise's settling is no news). A throw is a rejection.
 */
function launch(run: Run, tell: Tell): void {
  let told = false
  const end = (outcome?: Outcome) => {
    told = outcome !== undefined
    tell('END', outcome)
  }
  let ran: Promise<unknown>
  try {
    ran = Promise.resolve(run(end))
  } catch (error) {
    ran = Promise.reject(error)
  }
  ran.then(
    (value: unknown) => {
      if (!told) tell('SETTLED', { ok: true, value })
    },
    (error: unknown) => {
      if (!told) tell('SETTLED', { ok: false, error })
    },
  )
}

/** The event that tells the queue what operation `id` of `agentId` told. */
function told(agentId: string, id: number, type: 'END' | 'SETTLED', outcome: Outcome | undefined): QueueEvent {
  if (type === 'SETTLED') return { type, agentId, id, outcome: outcome! }
  return outcome === undefined ? { type, agentId, id } : { type, agentId, id, outcome }
}

/** Runs the operation (deferred: it runs once its `running` state is the actor's). */
function start(scope: Scope, agentId: string, running: Operation): void {
  const { self } = scope
  scope.defer(() => launch(running.run, (type, outcome) => self.send(told(agentId, running.id, type, outcome))))
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
      changed = [...operations, operation(event, event.state ?? 'queued')]
      break
    case 'END': {
      const { outcome } = event
      changed = moved(operations, event.id, (o) => (o.state !== 'running' ? undefined : outcome === undefined ? operation(o, 'ended') : operation(o, 'done', outcome)))
      break
    }
    case 'SETTLED':
      changed = moved(operations, event.id, (o) => (o.state === 'running' || o.state === 'ended' ? operation(o, 'done', event.outcome) : undefined))
      break
  }
  return changed === undefined ? state : { queues: withQueue(state.queues, agentId, advance(scope, agentId, changed)) }
}

/** The queues of one service's agents. */
export const queueLogic = fromTransition(queueTransition, (): QueueState => ({ queues: PersistentMap.empty() }))

export type QueueActor = ActorRefFrom<typeof queueLogic>

/**
 * An operation that began within its call and has not settled: what it told so far, until it
 * tells the queue. `taken` once it took its place in the queue; `returned` once its `run` returned.
 */
interface InCall {
  readonly id: number
  readonly run: Run
  readonly settle: (outcome: Outcome) => void
  state: 'running' | 'ended' | 'done'
  outcome: Outcome | undefined
  taken: boolean
  returned: boolean
}

/**
 * The agents' queues of one service: the queue chart, and the operation (at most one per agent)
 * that began within its own call and has not settled (see the header).
 */
export class Queue {
  /** The chart of the agents' queues. */
  readonly actor: QueueActor = createActor(queueLogic).start()
  /**
   * Per agent, the operation that began within its call and has not settled yet. While it is here,
   * every call of its agent goes through the queue, behind it.
   */
  readonly #inCall = new Map<string, InCall>()
  /** How many calls were made: the next one's id. */
  #calls = 0

  /**
   * Runs `run` in the agent's turn: it receives `end`, to call as soon as its result is known (the
   * next operation may run then; it ends anyway when its promise settles), with the outcome when
   * that is how its promise settles (the caller may settle then). Resolves or rejects as `run`'s
   * promise did, after every call of the agent made before it has settled.
   */
  take<T>(agentId: string, run: (end: (outcome?: Outcome) => void) => Promise<T>): Promise<T> {
    const id = this.#calls++
    return new Promise<T>((resolve, reject) => {
      const settle = (outcome: Outcome) => (outcome.ok ? resolve(outcome.value as T) : reject(outcome.error))
      const inCall = this.#inCall.get(agentId)
      if (inCall !== undefined) this.#enter(agentId, inCall)
      if (inCall !== undefined || this.actor.getSnapshot().context.queues.has(agentId)) {
        this.actor.send({ type: 'TAKE', agentId, id, run, settle })
      } else {
        this.#runInCall(agentId, { id, run, settle, state: 'running', outcome: undefined, taken: false, returned: false })
      }
    })
  }

  /** Runs an operation of an agent with nothing under way, within its call (see the header). */
  #runInCall(agentId: string, operation: InCall): void {
    this.#inCall.set(agentId, operation)
    launch(operation.run, (type, outcome) => {
      if (operation.returned && operation.taken) return this.actor.send(told(agentId, operation.id, type, outcome))
      // As the queue's transition moves an operation: an end only from running, a settling until done.
      if (operation.state === 'done' || (type === 'END' && operation.state !== 'running')) return
      operation.state = type === 'SETTLED' || outcome !== undefined ? 'done' : 'ended'
      operation.outcome = outcome
    })
    operation.returned = true
    const { state, outcome } = operation
    if (operation.taken) {
      // Taken while it ran: the queue holds it as running; what it told meanwhile follows now.
      if (state !== 'running') this.actor.send(told(agentId, operation.id, 'END', outcome))
    } else if (state === 'done') {
      // Settled within its call: the queue never needed to hear of it.
      this.#inCall.delete(agentId)
      operation.settle(outcome!)
    } else {
      this.#enter(agentId, operation) // it lasts beyond its call: later calls wait behind it
    }
  }

  /**
   * The operation that began within its call takes its place at the head of its agent's queue:
   * `running` while its `run` has not returned (nothing after it may start inside it), else as it is.
   */
  #enter(agentId: string, operation: InCall): void {
    if (operation.taken) return
    operation.taken = true
    const settle = (outcome: Outcome) => {
      if (this.#inCall.get(agentId) === operation) this.#inCall.delete(agentId)
      operation.settle(outcome)
    }
    const state = operation.returned ? (operation.state as 'running' | 'ended') : 'running'
    this.actor.send({ type: 'TAKE', agentId, id: operation.id, run: operation.run, settle, state })
  }

  /** Which agents have a call not settled yet (R77), the ones running within their calls included. */
  busy(): { has(agentId: string): boolean } {
    const { queues } = this.actor.getSnapshot().context
    return { has: (agentId) => queues.has(agentId) || this.#inCall.has(agentId) }
  }
}

/** Starts the queues of a service. */
export function createQueue(): Queue {
  return new Queue()
}

/** {@link Queue.take}. */
export function takeTurn<T>(queue: Queue, agentId: string, run: (end: (outcome?: Outcome) => void) => Promise<T>): Promise<T> {
  return queue.take(agentId, run)
}

/** Whether a call of the agent has not settled yet. */
export function isBusy(queue: Queue, agentId: string): boolean {
  return queue.busy().has(agentId)
}
