import { createActor, fromPromise, type Actor, type ActorSystem, type InspectionEvent, type Observer } from 'xstate'
import { resolveConfig } from './config.js'
import { createExitTool, planArgument, type ExitPlanModeTool } from './exit-tool.js'
import { createPlanCommand, type PlanCommand } from './command.js'
import { PLAN_MODE_EVENT, PLAN_REVIEW_EVENT, type PlanReviewData } from './log/events.js'
import { replayPlanLog } from './log/replay.js'
import { toChartEvent, type PlanModeEmitted, type PlanModeEvent } from './machines/events.js'
import { planModeMachine } from './machines/planModeMachine.js'
import {
  attachedSnapshot,
  isAppending,
  isEffectivelyActive,
  planModeState,
  type PlanModeSnapshot,
} from './machines/selectors.js'
import { createNotice } from './narration.js'
import { planProjection, type PlanProjection } from './projection.js'
import {
  REVIEW_MESSAGES,
  abortMessage,
  findPlanProblem,
  planTitle,
  reviewQuestion,
  type ReviewSettlement,
} from './review.js'
import type {
  PlanAgent,
  PlanModeConfig,
  PlanModeLogger,
  PlanModeOptions,
  PlanModeState,
  ReviewAnswer,
  SessionEvent,
  SetOutcome,
  StepBoundaryResult,
} from './types.js'

/** One agent's plan-mode actor. */
export type PlanModeActor = Actor<typeof planModeMachine>

/** The plan-mode service: one statechart actor per agent behind plain methods (SPEC §1). */
export interface PlanMode {
  /** `{ active: F }`, plus `pending: P's target` while a selection waits (R7). */
  get(agent: PlanAgent): PlanModeState
  /** A user selection (R8–R13); rejects with the log's error when an idle commit fails (R11). */
  set(agent: PlanAgent, active: boolean): Promise<SetOutcome>
  /** Call once per new step, right before deriving its request (R14–R20, R30–R36). */
  stepBoundary(agent: PlanAgent, options?: { signal?: AbortSignal }): Promise<StepBoundaryResult>
  /** The section under E, for hosts that assemble before the boundary; `''` without an agent (R21). */
  section(agent?: PlanAgent): string
  /** The always-registered `exit_plan_mode` tool (R40–R52). */
  readonly exitTool: ExitPlanModeTool
  /** `/plan [off|message]` (R53–R57). */
  readonly command: PlanCommand
  /** The projection for UIs (R58, R59). */
  readonly projection: PlanProjection
  /** The agent's XState actor, for inspection and tests (a detached one until it has stopped). */
  actor(agent: PlanAgent): PlanModeActor
  /**
   * Fails an open review as reloaded and stops the agent's actor once its work in flight (an
   * append, a review's record) has landed; until then that actor answers reads. The agent's next
   * operation re-attaches from the log after it (R63, R64).
   */
  detach(agent: PlanAgent): void
  /** A reload: open reviews fail, actors stop, subscriptions end; later calls fail (R60). */
  dispose(): Promise<void>
}

/** Thrown by every call that names an agent after `dispose` (R60). */
export const DISPOSED_MESSAGE = 'plan-mode service is disposed'

/** One attached agent: its actor, its log subscription and its operation queue. */
interface Attachment {
  agent: PlanAgent
  readonly actor: PlanModeActor
  /** The highest seq the actor has seen: F follows subscribe or append's value, once each. */
  lastSeq: number
  /** An operation is running on this attachment (a closing one stops only between them). */
  operating: boolean
  /** Emissions of the operation in progress. */
  collected: Collected[] | null
  /** The open review call, waiting for its settlement. */
  review: Deferred<ReviewSettlement> | null
  /** Pending-store writes in flight, awaited before an operation resolves. */
  storeWrites: Promise<void>
  unsubscribe(): void
  /** Set by detach/dispose: the actor stops once its review has settled and its work is done. */
  closing: boolean
  stopped: Deferred<void>
}

/** An emission as an operation sees it: an opened review carries its settlement to come. */
type Collected =
  | Exclude<PlanModeEmitted, { type: 'review.opened' }>
  | { type: 'review.opened'; settled: Promise<ReviewSettlement> }

interface Deferred<T> {
  promise: Promise<T>
  resolve(value: T): void
}

function deferred<T>(): Deferred<T> {
  let resolve!: (value: T) => void
  const promise = new Promise<T>((r) => (resolve = r))
  return { promise, resolve }
}

function isSessionEvent(value: unknown): value is SessionEvent {
  return typeof (value as SessionEvent | null)?.seq === 'number' && typeof (value as SessionEvent).type === 'string'
}

/** What one agent's chart reaches outside itself: bound by its service at attach. */
interface AgentPorts {
  append(type: string, data: unknown): Promise<SessionEvent>
  ask(plan: string, signal: AbortSignal): Promise<ReviewAnswer>
  warn(message: string, error: unknown): void
  rememberPending(active: boolean): void
  forgetPending(): void
}

/** Each agent actor's ports, found through its actor system (one root actor per system). */
const portsBySystem = new WeakMap<ActorSystem<any>, AgentPorts>()

function portsOf(system: ActorSystem<any>): AgentPorts {
  const ports = portsBySystem.get(system)
  if (!ports) throw new Error('plan-mode: actor is not attached')
  return ports
}

/**
 * The chart with its ports bound, once per process: `provide` rebuilds the whole machine, so
 * doing it per service (or per agent) would cost more than an attach (R71).
 */
const boundMachine = planModeMachine.provide({
  actors: {
    appendPlanMode: fromPromise<SessionEvent, { active: boolean }>(({ input, system }) =>
      portsOf(system).append(PLAN_MODE_EVENT, { active: input.active }),
    ),
    recordReview: fromPromise<SessionEvent, PlanReviewData>(({ input, system }) =>
      portsOf(system).append(PLAN_REVIEW_EVENT, input),
    ),
    askReview: fromPromise<ReviewAnswer, { plan: string }>(async ({ input, system, signal }) =>
      portsOf(system).ask(input.plan, signal),
    ),
  },
  actions: {
    warn: ({ event, system }, { message }) => portsOf(system).warn(message, (event as { error?: unknown }).error),
    rememberPending: ({ system }, { active }) => portsOf(system).rememberPending(active),
    forgetPending: ({ system }) => portsOf(system).forgetPending(),
  },
})

/**
 * Creates the plan-mode service. The first call that names an agent attaches it: its actor
 * starts from the replayed log (R64) and follows the log's subscription from then on (R70).
 * @throws the config errors of `resolveConfig` (R37).
 */
export function createPlanMode(config: PlanModeConfig, options: PlanModeOptions = {}): PlanMode {
  const { section } = resolveConfig(config)
  const logger: PlanModeLogger = options.logger ?? console
  const pendingStore = options.pendingStore
  const attachments = new Map<string, Attachment>()
  /**
   * Detached attachments still finishing the work in flight (an append, a review's record).
   * Until one stops, it answers its agent's reads, and the agent's next operation waits: the
   * next attachment replays the log once everything the detached one wrote is in it (R63, R64).
   */
  const closingAttachments = new Map<string, Attachment>()
  /** The tail of each agent's serialized operations (SPEC §1), across its attachments. */
  const tails = new Map<string, Promise<unknown>>()
  let disposed = false

  /** The logger port: a failing logger is itself contained (R62). */
  function warn(message: string, error: unknown): void {
    try {
      logger.warn(message, error)
    } catch {
      // Nowhere left to report to; the actor must keep working.
    }
  }

  /** Feeds one log event to the chart, once per seq, dropping those that cannot matter (R70). */
  function observe(attachment: Attachment, event: SessionEvent): void {
    if (!isSessionEvent(event) || event.seq <= attachment.lastSeq) return
    attachment.lastSeq = event.seq
    let chartEvent: PlanModeEvent | undefined
    try {
      chartEvent = toChartEvent(event)
    } catch (error) {
      warn('plan-mode: invalid plan/mode ignored', error) // R61
      return
    }
    if (chartEvent && attachment.actor.getSnapshot().status === 'active') attachment.actor.send(chartEvent)
  }

  async function appendEvent(attachment: Attachment, type: string, data: unknown): Promise<SessionEvent> {
    const event = await attachment.agent.session.append(type, data)
    observe(attachment, event)
    return event
  }

  function trackStoreWrite(attachment: Attachment, write: () => void | Promise<void>): void {
    attachment.storeWrites = attachment.storeWrites
      .then(write)
      .catch((error: unknown) => warn('plan-mode: pending store write failed', error))
  }


  function attach(agent: PlanAgent): Attachment {
    if (disposed) throw new Error(DISPOSED_MESSAGE)
    const existing = attachments.get(agent.id)
    if (existing) {
      existing.agent = agent // the latest caller's steer/owner/identity
      return existing
    }
    // Throws on an invalid plan/mode: every call fails until the log is repaired (R61).
    const fold = replayPlanLog(agent.session.events)
    const stored = pendingStore?.get(agent.id)
    const snapshot = attachedSnapshot({
      active: fold.projection.active,
      openTurn: fold.openTurn,
      told: fold.told,
      pending: typeof stored === 'boolean' ? stored : fold.projection.kept,
    })
    const actor = createActor(boundMachine, {
      snapshot,
      id: agent.id,
      ...(options.inspect ? { inspect: options.inspect as Observer<InspectionEvent> } : {}),
    })
    const attachment: Attachment = {
      agent,
      actor,
      lastSeq: fold.lastSeq,
      operating: false,
      collected: null,
      review: null,
      storeWrites: Promise.resolve(),
      unsubscribe: () => {},
      closing: false,
      stopped: deferred(),
    }
    portsBySystem.set(actor.system, {
      append: (type, data) => appendEvent(attachment, type, data),
      // REVIEW.OPEN is refused without a channel (R42.8), so one exists here.
      ask: (plan, signal) => options.review!.ask({ questions: [reviewQuestion(plan)], agent: attachment.agent, signal }),
      warn,
      rememberPending: (active) => {
        if (pendingStore) trackStoreWrite(attachment, () => pendingStore.set(attachment.agent.id, active))
      },
      forgetPending: () => {
        if (pendingStore) trackStoreWrite(attachment, () => pendingStore.delete(attachment.agent.id))
      },
    })
    actor.on('*', (emitted) => route(attachment, emitted as PlanModeEmitted))
    actor.start()
    attachment.unsubscribe = agent.session.subscribe((event) => observe(attachment, event))
    attachments.set(agent.id, attachment)
    return attachment
  }

  /** Routes the chart's emissions to the operation in progress and the open review call. */
  function route(attachment: Attachment, emitted: PlanModeEmitted): void {
    switch (emitted.type) {
      case 'review.opened':
        attachment.review = deferred()
        attachment.collected?.push({ type: 'review.opened', settled: attachment.review.promise })
        return
      default:
        attachment.collected?.push(emitted)
    }
    switch (emitted.type) {
      case 'review.answered':
        // The answer settles in turn with the agent's other operations; queued after the
        // current macrostep, never from inside it.
        queueMicrotask(() => void settleAnsweredReview(attachment).catch(() => {}))
        break
      case 'review.settled':
        attachment.review?.resolve(emitted.settlement)
        attachment.review = null
        if (attachment.closing) queueMicrotask(() => stopWhenQuiet(attachment))
        break
    }
  }

  /** Resolves once no append is in flight (rejects if the actor stopped). */
  function quiet(actor: PlanModeActor): Promise<void> {
    if (!isAppending(actor.getSnapshot())) return Promise.resolve()
    return new Promise((resolve, reject) => {
      const subscription = actor.subscribe({
        next: (snapshot: PlanModeSnapshot) => {
          if (isAppending(snapshot)) return
          subscription.unsubscribe()
          resolve()
        },
        error: reject,
        complete: () => reject(new Error(DISPOSED_MESSAGE)),
      })
    })
  }

  /**
   * Runs one operation of an agent: it starts after the agent's previous one finished (at once,
   * in the same call, when the agent is idle), sends one event, collects what the chart emits
   * until no append is in flight, and reads its result before the next operation may start.
   * It runs on the attachment current when its turn comes (after a detach, the next one, made
   * from the log once the detached one stopped), or on `bound` (a review's own settlement).
   * `precondition` runs when the operation's turn has come and may refuse it by throwing.
   */
  function perform<T = Collected[]>(
    agent: PlanAgent,
    event: PlanModeEvent,
    read: (collected: Collected[], attachment: Attachment) => T = (collected) => collected as T,
    precondition?: (attachment: Attachment) => void,
    bound?: Attachment,
  ): Promise<T> {
    const run = async (attachment: Attachment): Promise<T> => {
      if (attachment.actor.getSnapshot().status !== 'active') throw new Error(DISPOSED_MESSAGE)
      attachment.operating = true
      try {
        // A review's settlement waits for an append started outside the queue, too.
        if (isAppending(attachment.actor.getSnapshot())) await quiet(attachment.actor)
        precondition?.(attachment)
        const collected: Collected[] = []
        attachment.collected = collected
        try {
          attachment.actor.send(event)
          await quiet(attachment.actor)
          await attachment.storeWrites
        } finally {
          attachment.collected = null
        }
        return read(collected, attachment)
      } finally {
        attachment.operating = false
        if (attachment.closing) stopWhenQuiet(attachment)
      }
    }
    // Synchronous up to the event: an idle agent's operation acts in the same call.
    const task = (): Promise<T> => {
      try {
        if (bound) return run(bound)
        const detached = detachedAttachment(agent.id)
        // The detached attachment finishes its work first: its next one replays all of it.
        if (detached) return detached.stopped.promise.then(task)
        const attachment = attach(agent)
        // An append started outside the queue (a review closed by its call's abort) lands
        // first; the agent may be detached meanwhile, so the turn is looked at again.
        if (isAppending(attachment.actor.getSnapshot())) return quiet(attachment.actor).then(task, task)
        return run(attachment)
      } catch (error) {
        return Promise.reject(error) // attach refused (R60, R61)
      }
    }
    const tail = tails.get(agent.id)
    const result = tail === undefined ? task() : tail.then(task, task)
    const next: Promise<unknown> = result.catch(() => {})
    tails.set(agent.id, next)
    void next.then(() => {
      if (tails.get(agent.id) === next) tails.delete(agent.id)
    })
    return result
  }

  /** An answered review settles on its own attachment, in turn with the agent's operations. */
  function settleAnsweredReview(attachment: Attachment): Promise<Collected[]> {
    return perform(attachment.agent, { type: 'REVIEW.SETTLE' }, undefined, undefined, attachment)
  }

  /**
   * The attachment that answers reads (`get`, `section`, `actor`): a detached one until it has
   * stopped (it still follows the log and holds the agent's state), else the current one.
   */
  function attachmentForRead(agent: PlanAgent): Attachment {
    if (disposed) throw new Error(DISPOSED_MESSAGE)
    return detachedAttachment(agent.id) ?? attach(agent)
  }

  /** The agent's detached attachment still finishing its work, when no newer one exists. */
  function detachedAttachment(agentId: string): Attachment | undefined {
    return attachments.has(agentId) ? undefined : closingAttachments.get(agentId)
  }

  function find<T extends Collected['type']>(emitted: Collected[], ...types: T[]): Extract<Collected, { type: T }> {
    const found = emitted.find((e) => (types as string[]).includes(e.type))
    if (!found) throw new Error(`plan-mode: the chart did not settle the operation (${types.join(', ')})`)
    return found as Extract<Collected, { type: T }>
  }

  /**
   * Stops a closing agent's actor once its review settled, no append is in flight and no
   * operation runs on it (the one running calls this again when it ends).
   */
  function stopWhenQuiet(attachment: Attachment): void {
    const snapshot = attachment.actor.getSnapshot()
    if (snapshot.status === 'active') {
      if (attachment.operating) return
      if (attachment.review !== null || isAppending(snapshot)) {
        const retry = () => queueMicrotask(() => stopWhenQuiet(attachment))
        void (attachment.review?.promise ?? quiet(attachment.actor)).then(retry, retry)
        return
      }
      attachment.unsubscribe()
      attachment.actor.stop()
    }
    const { id } = attachment.agent
    if (closingAttachments.get(id) === attachment) closingAttachments.delete(id)
    attachment.stopped.resolve()
  }

  /** Closes an agent's attachment: its review fails as reloaded, then the actor stops. */
  function close(attachment: Attachment): Promise<void> {
    if (!attachment.closing) {
      attachment.closing = true
      const { id } = attachment.agent
      attachments.delete(id)
      closingAttachments.set(id, attachment)
      if (attachment.actor.getSnapshot().status === 'active') attachment.actor.send({ type: 'RELOAD' })
      stopWhenQuiet(attachment)
    }
    return attachment.stopped.promise
  }

  async function executeExitTool(args: unknown, context: { agent?: PlanAgent; signal?: AbortSignal } = {}) {
    if (disposed) throw new Error(DISPOSED_MESSAGE)
    const { agent, signal } = context ?? {}
    if (signal?.aborted) throw new Error(abortMessage(signal))
    if (!agent) throw new Error(REVIEW_MESSAGES.noAgent)
    const plan = planArgument(args)
    // Attaches now, so that a log that cannot attach fails the call first (R61).
    const calledOn = attachmentForRead(agent)
    const detachedBeforeCall = calledOn.closing
    if (plan === undefined) throw new Error(REVIEW_MESSAGES.planNotString)
    /** The attachment whose review this call opened. */
    let openedOn: Attachment | undefined
    const sendAbort = () => {
      if (openedOn?.actor.getSnapshot().status === 'active') {
        openedOn.actor.send({ type: 'REVIEW.ABORT', message: abortMessage(signal!) })
      }
    }
    // Aborted before its turn came, the call fails at once and asks nothing (R46); once the
    // review is open, the abort closes it in the chart.
    let onAbort = () => {}
    const aborted = new Promise<never>((_, reject) => {
      onAbort = () => (openedOn ? sendAbort() : reject(new Error(abortMessage(signal!))))
      signal?.addEventListener('abort', onAbort, { once: true })
    })
    aborted.catch(() => {})
    const refuseIfAborted = () => {
      if (signal?.aborted) throw new Error(abortMessage(signal))
      // Detached while the call waited for its turn: it fails like a review open then (R63).
      if (calledOn.closing && !detachedBeforeCall) throw new Error(REVIEW_MESSAGES.reloaded)
    }
    const openReview = perform(
      agent,
      {
        type: 'REVIEW.OPEN',
        plan,
        title: planTitle(plan) ?? 'Plan',
        problem: findPlanProblem(plan),
        owned: typeof agent.owner === 'string' && agent.owner !== '',
        hasChannel: options.review !== undefined,
      },
      (collected, attachment) => {
        const outcome = find(collected, 'review.rejected', 'review.opened')
        if (outcome.type === 'review.opened') openedOn = attachment
        if (openedOn && signal?.aborted) sendAbort() // aborted while the review was being opened
        return outcome
      },
      refuseIfAborted,
    )
    try {
      const outcome = await Promise.race([openReview, aborted])
      if (outcome.type === 'review.rejected') throw new Error(outcome.message)
      const settlement = await outcome.settled
      if (settlement.outcome !== 'approved') throw new Error(settlement.error)
      return { approved: true as const }
    } finally {
      signal?.removeEventListener('abort', onAbort)
    }
  }

  /** A selection, with the state right after it (before any later queued operation runs). */
  function select(agent: PlanAgent, active: boolean): Promise<{ outcome: SetOutcome; state: PlanModeState }> {
    return perform(agent, { type: 'SELECT', active: active === true }, (collected, attachment) => {
      const result = find(collected, 'set.settled', 'set.failed')
      if (result.type === 'set.failed') throw result.error
      return { outcome: result.outcome, state: planModeState(attachment.actor.getSnapshot()) }
    })
  }

  const command = createPlanCommand({ select })

  const service: PlanMode = {
    get(agent) {
      return planModeState(attachmentForRead(agent).actor.getSnapshot())
    },

    async set(agent, active) {
      return (await select(agent, active)).outcome
    },

    async stepBoundary(agent, { signal } = {}) {
      return perform(agent, { type: 'STEP_BOUNDARY', aborted: signal?.aborted === true }, (collected) => {
        const { active, notice } = find(collected, 'boundary.settled')
        return { section: active ? section : '', messages: notice ? [createNotice(notice)] : [] }
      })
    },

    section(agent) {
      if (agent === undefined) return ''
      return isEffectivelyActive(attachmentForRead(agent).actor.getSnapshot()) ? section : ''
    },

    exitTool: createExitTool(executeExitTool),
    command: {
      ...command,
      // After a reload the command fails like every call naming an agent (R60), rather than
      // reporting a mode change that could not happen (R57).
      run: (input) => (disposed ? Promise.reject(new Error(DISPOSED_MESSAGE)) : command.run(input)),
    },
    projection: planProjection,

    actor(agent) {
      return attachmentForRead(agent).actor
    },

    detach(agent) {
      if (disposed) throw new Error(DISPOSED_MESSAGE)
      const attachment = attachments.get(agent.id)
      if (attachment) void close(attachment)
    },

    async dispose() {
      if (disposed) return
      disposed = true
      await Promise.all([...attachments.values()].map(close))
    },
  }
  return service
}
