import { createActor, type Actor, type InspectionEvent, type Observer } from 'xstate'
import { observePlanLogEvent } from './log/kinds.js'
import { CHECKPOINT_WRITE_WARNING, CheckpointWriter, restoreSession, type CheckpointStore } from './log/checkpoint.js'
import type { PlanModeEmitted, PlanModeEvent } from './machines/planMode.events.js'
import { isThenable, type PlanModePorts } from './machines/planMode.effects.js'
import { planModeMachine } from './machines/planMode.machine.js'
import { restoreSnapshot } from './machines/planMode.restore.js'
import { DISPOSED_MESSAGE } from './machines/calls.machine.js'
import { isAppending, isStopped, type PlanModeSnapshot } from './machines/planMode.view.js'
import { reviewQuestion, type ReviewDecisions } from './plan/review.js'
import { waitAtMost } from './timeouts.js'
import type { PendingStore, PlanAgent, PlanModeLogger, ReviewAnswer, ReviewChannel, SessionEvent } from './types.js'

/** One agent's plan-mode actor. */
export type PlanModeActor = Actor<typeof planModeMachine>

/** Reported when a reload or detach stops waiting for the store writes (R73). */
export function storeAbandonedMessage(closeTimeout: number): string {
  return `plan-mode: a pending-store or checkpoint write did not settle within ${closeTimeout} ms of a reload or detach; it was abandoned`
}

/** Reported when the log hands over an event whose seq it does not hold (R74). */
export const SEQ_CONTRACT_WARNING = 'plan-mode: the session log broke the seq contract; event ignored'

/** What every attachment of one service shares. */
export interface AttachmentSettings {
  review: ReviewChannel | undefined
  logger: PlanModeLogger
  pendingStore: PendingStore | undefined
  inspect: Observer<InspectionEvent> | undefined
  /** The bounded wait of a reload or detach, in ms (R73). */
  closeTimeout: number
  /** Where checkpoints are saved, and after how many events at least (R76). */
  checkpoints: { store: CheckpointStore; every: number } | undefined
  /** Which decisions reviews offer (R101). */
  decisions: ReviewDecisions
}

/** Who listens to the chart's reports (`Attachment.listen`). */
interface Listener {
  told: (emitted: PlanModeEmitted) => void
  stopped: (error?: unknown) => void
}

/**
 * What an attachment has had under way beyond an idle agent's reads: made on its first write,
 * listener or close, so that an idle agent holds one empty field for all of it (R70: memory per
 * idle agent).
 */
interface Underway {
  /** Pending-store writes in flight, awaited before an operation resolves. */
  storeWrites: Promise<void> | undefined
  /** The last pending-store write failed: P is only in the chart (R77). */
  storeFailed: boolean
  /** Checkpoint writes in flight, awaited by a close only (R76). */
  checkpointWrites: Promise<void> | undefined
  /** The asynchronous appends started and not settled yet (their settlements). */
  appending: Set<Promise<void>> | undefined
  /** The close: the actor stopped and the writes landed or were abandoned (R73). */
  stopped: Promise<void> | undefined
  /** Who listens to the chart's reports; one listener on the actor serves them all. */
  listeners: Set<Listener> | undefined
}

function isSessionEvent(value: unknown): value is SessionEvent {
  return typeof (value as SessionEvent | null)?.seq === 'number' && typeof (value as SessionEvent).type === 'string'
}

/**
 * One agent attached to its chart: the actor started from the replayed log (R64), the log's
 * subscription feeding it (R70), and the agent's ports, which the chart reaches through its
 * context. It holds no plan state of its own: the chart does.
 */
export class Attachment implements PlanModePorts {
  // Private fields only: the attachment is the chart's `context.ports`, and an inspector that
  // serializes the context must find nothing here to walk into (the log, the actor).
  readonly #actor: PlanModeActor
  #agent: PlanAgent
  readonly #settings: AttachmentSettings
  /** The highest seq the chart has seen: F follows `subscribe` or `append`'s value, once each (§1). */
  #lastSeq: number
  readonly #unsubscribe: () => void
  /** What is or was under way: writes, appends, listeners, the close; undefined while the agent only answered reads. */
  #underway: Underway | undefined
  /** The agent's id (the key of its attachment in the service). */
  readonly agentId: string
  /** Saves the agent's checkpoints, when the service has a store (R76). */
  #checkpoints: CheckpointWriter | undefined

  /**
   * @param generation how many attachments this agent had before this one in its service: an exit
   *   call checks it to tell a detach that happened while it waited (R63).
   * @throws on an invalid `plan/mode` in the log (R61): the agent cannot attach until it is
   *   repaired; and what a throwing `subscribe` throws (nothing is left running then).
   */
  constructor(
    agent: PlanAgent,
    settings: AttachmentSettings,
    readonly generation: number,
  ) {
    this.agentId = agent.id
    this.#agent = agent
    this.#settings = settings
    const { restore: fold, base } = restoreSession(agent.session, agent.id, (message, error) => this.warn(message, error))
    this.#lastSeq = fold.lastSeq
    if (settings.checkpoints) this.#checkpoints = new CheckpointWriter(settings.checkpoints.store, settings.checkpoints.every, base)
    const stored = this.#storedSelection(agent.id)
    const snapshot = restoreSnapshot(fold, stored ?? fold.kept, this, settings.closeTimeout)
    this.#actor = createActor(planModeMachine, { snapshot, id: agent.id, ...(settings.inspect ? { inspect: settings.inspect } : {}) })
    this.#actor.start()
    let unsubscribe: unknown
    try {
      // Bound rather than an arrow: no closure context of its own (R70: memory per idle agent).
      unsubscribe = agent.session.subscribe(this.#observe.bind(this))
    } catch (error) {
      this.#actor.stop()
      throw error
    }
    this.#unsubscribe = typeof unsubscribe === 'function' ? (unsubscribe as () => void) : () => {}
  }

  /** P as the host's pending store kept it; a store that throws or answers garbage is ignored (R62). */
  #storedSelection(agentId: string): boolean | null {
    try {
      const stored = this.#settings.pendingStore?.get(agentId)
      return typeof stored === 'boolean' ? stored : null
    } catch (error) {
      this.warn('plan-mode: pending store read failed', error)
      return null
    }
  }

  /** What is under way, made on the first need of it. */
  #underwayNow(): Underway {
    return (this.#underway ??= { storeWrites: undefined, storeFailed: false, checkpointWrites: undefined, appending: undefined, stopped: undefined, listeners: undefined })
  }

  /** The latest caller's agent object: its `steer`, `owner` and identity are the ones used. */
  follow(agent: PlanAgent): this {
    this.#agent = agent
    return this
  }

  /** The agent's actor. */
  get actor(): PlanModeActor {
    return this.#actor
  }

  /** The actor's current snapshot. */
  get snapshot(): PlanModeSnapshot {
    return this.actor.getSnapshot()
  }

  /**
   * Sends an operation and resolves with `read(told)` of what the chart emitted for it (one of
   * `kinds`), once the pending store has what the operation wrote. `read` runs the moment the
   * chart tells it, before the chart moves on: an exit call starts listening for its review right
   * there. Rejects with the abandoned message when a reload or detach gave up on its work (R73),
   * and with `plan-mode service is disposed` when the actor stops first.
   */
  operate<K extends PlanModeEmitted['type'], T>(
    event: PlanModeEvent,
    kinds: readonly K[],
    read: (told: PlanModeEmitted & { type: K }) => T,
  ): Promise<T> {
    const actor = this.#actor
    const value = new Promise<T>((resolve, reject) => {
      const isAnswer = (told: PlanModeEmitted): told is PlanModeEmitted & { type: K } => (kinds as readonly string[]).includes(told.type)
      const stop = this.listen(
        (told) => {
          if (told.type === 'abandoned') {
            stop()
            reject(new Error(told.error)) // R73
          } else if (isAnswer(told)) {
            stop()
            try {
              resolve(read(told))
            } catch (error) {
              reject(error) // a refused operation: it rejects here, never inside XState
            }
          }
        },
        (error) => {
          stop()
          reject(error ?? new Error(DISPOSED_MESSAGE))
        },
      )
    })
    try {
      actor.send(event)
    } catch (error) {
      return Promise.reject(error)
    }
    // Without a pending store there is nothing more to wait for: the chart's answer is the result.
    if (!this.writesStore) return value
    // Only a write in flight is waited for: without one, no extra turn of the microtask queue.
    return value.then((result) => {
      const storeWrites = this.#underway?.storeWrites
      return storeWrites === undefined ? result : storeWrites.then(() => result)
    })
  }

  /**
   * Hears what the chart emits (`PlanModeEmitted`), and its stop (or error), until the returned
   * function is called. One listener on the actor serves them all, made on the first call: an
   * operation adds and removes an entry, no subscription of its own (R70).
   */
  listen(told: (emitted: PlanModeEmitted) => void, stopped: (error?: unknown) => void): () => void {
    const listeners = this.#underway?.listeners ?? this.#relay()
    const listener = { told, stopped }
    listeners.add(listener)
    return () => listeners.delete(listener)
  }

  /** The listeners of `listen`, and the one listener and subscription on the actor that serve them. */
  #relay(): Set<Listener> {
    const listeners = (this.#underwayNow().listeners = new Set())
    this.#actor.on('*', (emitted) => {
      for (const listener of [...listeners]) listener.told(emitted)
    })
    this.#actor.subscribe({
      error: (error) => [...listeners].forEach((listener) => listener.stopped(error)),
      complete: () => [...listeners].forEach((listener) => listener.stopped()),
    })
    return listeners
  }

  /** Resolves once the pending-store writes started so far have landed (or failed, reported). */
  storeWritten(): Promise<void> {
    return this.#underway?.storeWrites ?? Promise.resolve()
  }

  /** Sends an event that is not an operation (an abort), unless the actor has stopped. */
  send(event: PlanModeEvent): void {
    if (this.snapshot.status === 'active') this.actor.send(event)
  }

  /** Resolves once no append is in flight. */
  quiet(): Promise<unknown> {
    return this.until((s) => (isAppending(s) ? undefined : s))
  }

  /**
   * Resolves with `read(snapshot)` as soon as it is defined, now or after a later macrostep.
   * @throws (rejects) `plan-mode service is disposed` when the actor stops first.
   */
  until<T>(read: (snapshot: PlanModeSnapshot) => T | undefined): Promise<T> {
    try {
      const now = read(this.snapshot)
      if (now !== undefined) return Promise.resolve(now)
    } catch (error) {
      return Promise.reject(error)
    }
    return new Promise<T>((resolve, reject) => {
      // `read` may throw (a refused operation): that rejects here, never inside XState.
      const settle = (snapshot: PlanModeSnapshot, last: boolean): boolean => {
        try {
          const value = read(snapshot)
          if (value !== undefined) resolve(value)
          else if (last) reject(new Error(DISPOSED_MESSAGE))
          return value !== undefined
        } catch (error) {
          reject(error)
          return true
        }
      }
      const subscription = this.actor.subscribe({
        next: (snapshot) => {
          if (settle(snapshot, false)) subscription.unsubscribe()
        },
        error: reject,
        complete: () => settle(this.snapshot, true),
      })
    })
  }

  /**
   * Reload or detach: the chart closes an open review and lets the work in flight land; when it
   * says `stopped`, the actor stops and the log's subscription ends.
   */
  close(): Promise<void> {
    const underway = this.#underwayNow()
    if (underway.stopped === undefined) {
      if (this.snapshot.status === 'active') this.actor.send({ type: 'RELOAD' })
      const stop = () => {
        try {
          this.#unsubscribe()
        } catch (error) {
          this.warn('plan-mode: log unsubscribe failed', error) // R62: the actor stops all the same
        } finally {
          this.actor.stop()
        }
      }
      // Stopped, and its store writes landed: the next attachment reads the store (R64), at most
      // one close timeout later (R73).
      const { closeTimeout } = this.#settings
      underway.stopped = this.until((s) => (isStopped(s) ? true : undefined))
        .then(stop, stop)
        .then(() => waitAtMost(closeTimeout, Promise.all([this.storeWritten(), underway.checkpointWrites])))
        .then((settled) => {
          if (!settled) this.warn(storeAbandonedMessage(closeTimeout), undefined)
        })
    }
    return underway.stopped
  }

  // The ports (see planMode.effects.ts). Each returns or throws only what the chart handles.

  /** Appends to the agent's log; the event it returns is observed like a subscribed one (§1). */
  append(type: string, data: unknown): unknown {
    // Taken before the append starts: a log may tell its subscribers of the event within append.
    const before = this.#lastSeq
    const written = this.#agent.session.append(type, data)
    if (!isThenable(written)) {
      this.#observe(written)
      return written
    }
    // Any thenable, not only a Promise: its own `then` may return nothing.
    const observed = Promise.resolve(written).then((event) => this.#observeAppended(event, before))
    const appending = (this.#underwayNow().appending ??= new Set())
    const settled: Promise<void> = observed.then(
      () => void appending.delete(settled),
      () => void appending.delete(settled),
    )
    appending.add(settled)
    return observed
  }

  /**
   * Resolves once every append this attachment started has settled, landed or failed: after a
   * close abandoned some (R73), the agent's next operation waits for this, so that it decides on
   * a log that holds them.
   */
  appendsSettled(): Promise<void> {
    return Promise.all(this.#underway?.appending ?? []).then(() => undefined)
  }

  /** Whether appends this attachment started have not settled yet. */
  get hasAppendsInFlight(): boolean {
    return (this.#underway?.appending?.size ?? 0) > 0
  }

  /** Which decisions this service's reviews offer (R101). */
  get decisions(): ReviewDecisions {
    return this.#settings.decisions
  }

  /** Asks the service's review channel about the plan, for the latest caller's agent (R43). */
  ask(plan: string, signal: AbortSignal): Promise<ReviewAnswer> {
    // REVIEW.OPEN is refused without a channel (R42.8), so one exists here.
    return this.#settings.review!.ask({ questions: [reviewQuestion(plan, this.#settings.decisions)], agent: this.#agent, signal })
  }

  /** The logger port; a logger that throws is ignored (R62). */
  warn(message: string, error: unknown): void {
    try {
      this.#settings.logger.warn(message, error)
    } catch {
      // Nowhere left to report to; the actor must keep working (R62).
    }
  }

  /** The pending store: `active` waits for a boundary. */
  rememberPending(active: boolean): void {
    const store = this.#settings.pendingStore
    if (store) this.#writeStore(() => store.set(this.#agent.id, active))
  }

  /** The pending store: nothing waits. */
  forgetPending(): void {
    const store = this.#settings.pendingStore
    if (store) this.#writeStore(() => store.delete(this.#agent.id))
  }

  /**
   * Chains a pending-store write after the ones in flight; a failure is reported (R62) and keeps
   * the agent in memory until a later write succeeds (R77).
   */
  #writeStore(write: () => void | Promise<void>): void {
    const underway = this.#underwayNow()
    underway.storeWrites = (underway.storeWrites ?? Promise.resolve())
      .then(write)
      .then(
        () => {
          underway.storeFailed = false
        },
        (error: unknown) => {
          underway.storeFailed = true
          this.warn('plan-mode: pending store write failed', error)
        },
      )
  }

  /** Whether the service has a pending store: an operation's result waits for its writes. */
  get writesStore(): boolean {
    return this.#settings.pendingStore !== undefined
  }

  /** Whether the pending store holds P as the chart does: the agent may leave memory with one (R77). */
  get keepsPendingDurably(): boolean {
    return this.#settings.pendingStore !== undefined && this.#underway?.storeFailed !== true
  }

  /**
   * The event an asynchronous append resolved with, `before` the seq taken when it began. A log
   * that answers something else (breaking the `append` contract) still holds the event: the chart
   * catches up from the log's newest events, so the step runs under the state the log holds (R17,
   * R18).
   */
  #observeAppended(event: unknown, before: number): void {
    if (!isSessionEvent(event)) return this.#catchUp()
    // An appended event is new: a seq at or below the one taken before the append began is not (R74).
    if (event.seq <= before) {
      const error = new Error(`${event.type} was appended with seq ${event.seq}, but the log already had seq ${before}`)
      return this.warn(SEQ_CONTRACT_WARNING, error)
    }
    this.#observe(event)
  }

  /**
   * Feeds one log event to the chart, once per seq. The log's events come one seq after another
   * (§0): an event further ahead either has predecessors not heard yet (a log that notifies
   * late), which the chart reads from the log first, or claims a seq more than one past what the
   * log holds, which is reported and not believed (R74), so no later event is ever dropped below
   * it. The first event of a log that holds none may have any seq.
   */
  #observe(event: unknown): void {
    if (!isSessionEvent(event) || event.seq <= this.#lastSeq) return
    if (event.seq === this.#lastSeq + 1) return this.#feed(event)
    this.#catchUp()
    if (event.seq <= this.#lastSeq) return
    // Next after what the log holds, or the first event of a log that holds none yet (any seq).
    if (event.seq === this.#lastSeq + 1 || this.#lastSeq === -Infinity) return this.#feed(event)
    const error = new Error(`${event.type} claims seq ${event.seq}, but the log's last event has seq ${this.#lastSeq}`)
    this.warn(SEQ_CONTRACT_WARNING, error)
  }

  /** Feeds the chart the log's events it has not seen yet, oldest first (read from the log's end). */
  #catchUp(): void {
    const { events } = this.#agent.session
    let first = events.length
    while (first > 0 && (events[first - 1]?.seq ?? -Infinity) > this.#lastSeq) first--
    for (let i = first; i < events.length; i++) {
      const event = events[i]
      if (isSessionEvent(event) && event.seq > this.#lastSeq) this.#feed(event)
    }
  }

  /** Moves the chart's seq to `event` and sends what it means, dropping what cannot matter (R70). */
  #feed(event: SessionEvent): void {
    this.#lastSeq = event.seq
    if (this.#checkpoints?.taken(event)) {
      // Its own chain: operations do not wait for a checkpoint, a close does (R76).
      const writer = this.#checkpoints
      const underway = this.#underwayNow()
      underway.checkpointWrites = (underway.checkpointWrites ?? Promise.resolve())
        .then(() => writer.write(this.#agent.id, this.#agent.session.events, event))
        .catch((error: unknown) => this.warn(CHECKPOINT_WRITE_WARNING, error))
    }
    let chartEvent: PlanModeEvent | undefined
    try {
      chartEvent = observePlanLogEvent(event)
    } catch (error) {
      this.warn('plan-mode: invalid plan/mode ignored', error) // R61
      return
    }
    if (chartEvent !== undefined && this.snapshot.status === 'active') this.actor.send(chartEvent)
  }
}

