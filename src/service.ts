import { createActor, type InspectionEvent, type Observer } from 'xstate'
import { Attachment, DISPOSED_MESSAGE, type AttachmentSettings, type PlanModeActor } from './attachment.js'
import { isTimeoutMs, MAX_TIMEOUT_MS, waitAtMost } from './timeouts.js'
import { resolveConfig } from './config.js'
import { createTurns } from './turns.js'
import { DEFAULT_CLOSE_TIMEOUT_MS } from './machines/planMode.machine.js'
import { planProjection, type PlanProjection } from './log/projection.js'
import type { PlanModeEmitted, PlanModeEvent } from './machines/planMode.events.js'
import { answerCallMachine, exitCallMachine, startCall, type TakeTurn } from './machines/calls.machine.js'
import {
  canLeaveMemory,
  isAppending,
  isClosing,
  isEffectivelyActive,
  openDurableReview,
  planModeState,
  type PlanModeSnapshot,
} from './machines/planMode.view.js'
import { createPlanCommand, type PlanCommand } from './plan/command.js'
import { createExitTool, planArgument, type ExitPlanModeTool, type ExitToolContext, type ExitToolResult } from './plan/exit-tool.js'
import { createNarration, createNotice } from './plan/narration.js'
import {
  MALFORMED_ANSWER_MESSAGE,
  REVIEW_MESSAGES,
  abortMessage,
  answerClosedMessage,
  copyAnswer,
  isWellFormedAnswer,
  newsText,
  readReviewAnswer,
  ReviewCommentError,
  type ReviewDecisions,
  type ReviewVerdict,
} from './plan/review.js'
import { headlessReviewPolicy, policyVerdict, type HeadlessReviewPolicy } from './plan/headless.js'
import type { ApprovedPlan, ReviewOutcome } from './log/kinds.js'
import { approvedPlanOf } from './log/checkpoint.js'
import type {
  AnswerReviewOptions,
  OpenReviewView,
  PlanAgent,
  PlanModeConfig,
  PlanModeOptions,
  PlanModeState,
  SetOutcome,
  StepBoundaryOptions,
  StepBoundaryResult,
  UserMessage,
} from './types.js'

export { DISPOSED_MESSAGE, type PlanModeActor } from './attachment.js'

/** `set` with anything but a boolean fails with this, never a silent `'noop'` (R8). */
const SET_NEEDS_BOOLEAN = 'plan mode set(agent, active) needs a boolean active'

/** An operation called before `dispose` whose turn had not come fails with this (R60). */
export const DISPOSED_BEFORE_TURN_MESSAGE = "plan-mode service was disposed before this call's turn came; nothing was done"

/** The close timeout of R73, checked: a number of milliseconds from 0 to `MAX_TIMEOUT_MS`. */
function closeTimeoutOf(value: unknown): number {
  if (value === undefined) return DEFAULT_CLOSE_TIMEOUT_MS
  if (!isTimeoutMs(value)) {
    throw new TypeError(`plan mode option closeTimeoutMs must be a number of milliseconds from 0 to ${MAX_TIMEOUT_MS}; got ${String(value)}`)
  }
  return value
}

/** The bound of R77, checked: undefined (no bound) or a whole number, at least 1. */
function maxAttachedAgentsOf(value: unknown): number | undefined {
  if (value === undefined) return undefined
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1) {
    throw new TypeError(`plan mode option maxAttachedAgents must be a whole number, at least 1; got ${String(value)}`)
  }
  return value
}


/** The decisions reviews offer (R101), checked. */
function decisionsOf(value: unknown): ReviewDecisions {
  if (value === undefined || value === 'approve-or-keep' || value === 'all') return value ?? 'approve-or-keep'
  throw new TypeError(`plan mode option decisions must be 'approve-or-keep' or 'all'; got ${String(value)}`)
}

/** The review mode of R78, checked. */
function reviewsOf(value: unknown): 'channel' | 'durable' {
  if (value === undefined || value === 'channel' || value === 'durable') return value ?? 'channel'
  throw new TypeError(`plan mode option reviews must be 'channel' or 'durable'; got ${String(value)}`)
}

/** How many events at least a checkpoint covers beyond the last one (R76). */
const DEFAULT_CHECKPOINT_EVERY = 100

/** The checkpoint settings of R76, checked. */
function checkpointsOf(options: PlanModeOptions): AttachmentSettings['checkpoints'] {
  const { checkpoints: store, checkpointEvery: every = DEFAULT_CHECKPOINT_EVERY } = options
  if (typeof every !== 'number' || !Number.isSafeInteger(every) || every < 1) {
    throw new TypeError(`plan mode option checkpointEvery must be a whole number of events, at least 1; got ${String(every)}`)
  }
  if (store === undefined) return undefined
  if (typeof store?.save !== 'function') throw new TypeError('plan mode option checkpoints needs a save(agentId, checkpoint) method')
  return { store, every }
}

/** What `answerReviewByPolicy` did (R95): which durable review it closed, and how it was recorded. */
export interface PolicyReviewAnswer {
  /** The id of the durable review the policy closed. */
  reviewId: string
  /** `'approved'` (policy `'approve'`) or `'dismissed'` (policy `'stop'`), as the log holds it. */
  outcome: 'approved' | 'dismissed'
}

/** The plan-mode service: one statechart actor per agent behind plain methods (docs/spec.md §1). */
export interface PlanMode {
  /** `{ active: F }`, plus `pending: P's target` while a selection waits (R7). */
  get(agent: PlanAgent): PlanModeState
  /** A user selection (R8–R13); rejects with the log's error when an idle commit fails (R11). */
  set(agent: PlanAgent, active: boolean): Promise<SetOutcome>
  /**
   * Call once per new step, right before deriving its request (R14–R20, R30–R36). `handoff: true`
   * says the step's request starts a fresh context whose first message tells the plan approved
   * into it (`dueHandoff`, R102): the boundary then does not tell that approval itself.
   */
  stepBoundary(agent: PlanAgent, options?: StepBoundaryOptions): Promise<StepBoundaryResult>
  /** The section under E, for hosts that assemble before the boundary; `''` without an agent (R21). */
  section(agent?: PlanAgent): string
  /** The always-registered `exit_plan_mode` tool (R40–R52, R79). */
  readonly exitTool: ExitPlanModeTool
  /** The durable review the agent's log holds open, or null (R79): what a UI renders after any restart. */
  openReview(agent: PlanAgent): OpenReviewView | null
  /**
   * Answers the durable review `reviewId` from any process attached to the agent's log (R80):
   * resolves with the recorded outcome, rejects with the refusal (nothing changed).
   */
  answerReview(agent: PlanAgent, reviewId: string, answer: unknown, options?: AnswerReviewOptions): Promise<'approved' | 'keep-planning' | 'left'>
  /**
   * For hosts with nobody to ask (CI bots, batch jobs): closes the durable review open for the
   * agent by a headless policy (R95), recorded with `by: 'policy'`: `'approve'` approves it as
   * `answerReview` would, `'stop'` dismisses it (the run stays in plan mode, the plan in the log).
   * Resolves with the review's id and recorded outcome, or `null` when no durable review is open;
   * rejects as `answerReview` does, and with a `TypeError` for any other policy (R94).
   */
  answerReviewByPolicy(agent: PlanAgent, policy: HeadlessReviewPolicy, options?: AnswerReviewOptions): Promise<PolicyReviewAnswer | null>
  /**
   * The plan the user approved last (R98), from the agent's log: `{ title, plan, seq, by? }`, or
   * null before any approval and once plan mode is entered again. Costs a backward read of the
   * log to that approval or entry.
   */
  approvedPlan(agent: PlanAgent): ApprovedPlan | null
  /** Which decisions this service's reviews offer (R101). */
  readonly decisions: 'approve-or-keep' | 'all'
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

/**
 * Creates the plan-mode service. The first call that names an agent attaches it: its actor
 * starts from the replayed log (R64) and follows the log's subscription from then on (R70).
 * Every call sends the agent's chart an event, waits, and reads the result from its snapshot.
 * @throws the config errors of `resolveConfig` (R37).
 */
export function createPlanMode(config: PlanModeConfig, options: PlanModeOptions = {}): PlanMode {
  const { section } = resolveConfig(config)
  const settings: AttachmentSettings = {
    review: options.review,
    logger: options.logger ?? console,
    pendingStore: options.pendingStore,
    inspect: options.inspect as Observer<InspectionEvent> | undefined,
    closeTimeout: closeTimeoutOf(options.closeTimeoutMs),
    checkpoints: checkpointsOf(options),
    decisions: decisionsOf(options.decisions),
  }
  const durableReviews = reviewsOf(options.reviews) === 'durable'
  /** Each agent's attachment; a closing one stays until its actor stopped, answering reads. */
  const attachments = new Map<string, Attachment>()
  /** Each agent's operations take turns (§1). */
  const turns = createTurns()
  /** How many attachments each agent has had: an exit call tells a detach by it (R63). */
  const generations = new Map<string, number>()
  let disposed = false

  /** Attachments being closed (a detach, a reload, or leaving memory), until their actors stopped. */
  const closing = new Set<Attachment>()
  /** Per agent, the settling of appends a close abandoned (R73): operations wait for it. */
  const abandoned = new Map<string, Promise<void>>()
  /** Resolves on `dispose()`: nothing waits for an abandoned append after it. */
  let resolveDisposal!: () => void
  const disposal = new Promise<void>((resolve) => (resolveDisposal = resolve))
  const maxAttached = maxAttachedAgentsOf(options.maxAttachedAgents)

  /** The agent's attachment for a read: a closing one until it stopped, else a new one from the log. */
  function attachmentOf(agent: PlanAgent): Attachment {
    if (disposed) throw new Error(DISPOSED_MESSAGE)
    const current = attachments.get(agent.id)
    // A closing attachment stays current until its close has resolved (its writes landed, the
    // appends it abandoned known): operations wait for it, reads see its last state (R60, R73).
    if (current !== undefined && (current.snapshot.status === 'active' || closing.has(current))) {
      if (maxAttached !== undefined && !closing.has(current)) {
        // Least recently used last out (R77): the map's order is the order of use.
        attachments.delete(agent.id)
        attachments.set(agent.id, current)
      }
      return current.follow(agent)
    }
    const generation = (generations.get(agent.id) ?? 0) + 1
    const attachment = new Attachment(agent, settings, generation) // throws on an invalid log (R61)
    generations.set(agent.id, generation)
    attachments.delete(agent.id)
    attachments.set(agent.id, attachment)
    if (maxAttached !== undefined) leaveMemory(maxAttached, attachment)
    return attachment
  }

  /**
   * R77: while more than `max` agents are attached, the least recently used ones that hold
   * nothing but what their log (and pending store) holds leave memory; the others stay, and so
   * does the one just `attached`.
   */
  function leaveMemory(max: number, attached: Attachment): void {
    let excess = attachments.size - closing.size - max
    for (const [id, attachment] of attachments) {
      if (excess <= 0) return
      if (attachment === attached || closing.has(attachment) || turns.isBusy(id) || !canLeaveMemory(attachment.snapshot, attachment.keepsPendingDurably)) continue
      excess--
      close(attachment)
        .then(() => {
          // Forgotten entirely once nothing waits for it: a later call starts a new count (R63).
          if (!attachments.has(id) && !turns.isBusy(id)) generations.delete(id)
        })
        .catch(() => {}) // a failing close is reported by its own calls
    }
  }

  function close(attachment: Attachment): Promise<void> {
    closing.add(attachment)
    return attachment.close().then(() => {
      closing.delete(attachment)
      const id = attachment.agentId
      if (attachments.get(id) === attachment) attachments.delete(id)
      // Appends the close abandoned (R73): the agent's next operation waits for them to settle.
      if (attachment.hasAppendsInFlight) {
        const settled = attachment.appendsSettled().then(() => {
          if (abandoned.get(id) === settled) abandoned.delete(id)
        })
        abandoned.set(id, settled)
      }
    })
  }

  /**
   * Runs one operation of an agent in its turn (§1): on the attachment current when the turn
   * comes, once no append is in flight; sends the event and reads what the chart told (`kinds`).
   * `precondition` may refuse it by throwing when its turn has come. Called after `dispose` it
   * fails at once; called before but still waiting when `dispose` came, it fails with
   * `disposedBeforeTurn` when its turn comes, having done nothing (R60).
   */
  function perform<K extends PlanModeEmitted['type'], T>(
    agent: PlanAgent,
    event: PlanModeEvent,
    kinds: readonly K[],
    read: (told: PlanModeEmitted & { type: K }, attachment: Attachment) => T,
    precondition?: (attachment: Attachment) => void,
    disposedBeforeTurn = DISPOSED_BEFORE_TURN_MESSAGE,
  ): Promise<T> {
    if (disposed) return Promise.reject(new Error(DISPOSED_MESSAGE))
    return turns.take(agent.id, (end) => {
      const run = (): Promise<T> => {
        if (disposed) throw new Error(disposedBeforeTurn)
        // An append abandoned by a close may still land: decide once the log holds it, or once
        // another close timeout has passed (R73).
        const prior = abandoned.get(agent.id)
        if (prior !== undefined) {
          abandoned.delete(agent.id)
          return waitAtMost(settings.closeTimeout, Promise.race([prior, disposal])).then(run)
        }
        const attachment = attachmentOf(agent)
        // Work behind a detach runs on the next attachment, replayed once all of it landed.
        if (isClosing(attachment.snapshot)) return close(attachment).then(run, run)
        // A review's record started outside the queue lands first.
        if (isAppending(attachment.snapshot)) return attachment.quiet().then(run, run)
        precondition?.(attachment)
        return attachment.operate(event, kinds, (told) => {
          end()
          return read(told, attachment)
        })
      }
      return run()
    })
  }

  /** A selection, with the state right after it (before any later queued operation runs). */
  function select(agent: PlanAgent, active: boolean): Promise<{ outcome: SetOutcome; state: PlanModeState }> {
    if (typeof active !== 'boolean') return Promise.reject(new TypeError(`${SET_NEEDS_BOOLEAN}; got ${typeof active}`))
    return perform(agent, { type: 'SELECT', active }, ['selected'], (told, attachment) => {
      if ('error' in told) throw told.error
      return { outcome: told.outcome, state: planModeState(attachment.snapshot) }
    })
  }

  function executeExitTool(args: unknown, context: ExitToolContext = {}): Promise<ExitToolResult> {
    try {
      if (disposed) throw new Error(DISPOSED_MESSAGE)
      const { agent, signal, callId } = context ?? {}
      if (signal?.aborted) throw new Error(abortMessage(signal))
      if (!agent) throw new Error(REVIEW_MESSAGES.noAgent)
      const plan = planArgument(args)
      const calledOn = attachmentOf(agent) // a log that cannot attach fails the call first (R61)
      if (plan === undefined) throw new Error(REVIEW_MESSAGES.planNotString)
      // The attachment the review may open on: this one, or the next after a detach already made.
      const generation = calledOn.generation + (isClosing(calledOn.snapshot) ? 1 : 0)
      const durable = durableReviews ? { reviewId: globalThis.crypto.randomUUID(), ...(typeof callId === 'string' ? { callId } : {}) } : undefined
      const event: PlanModeEvent = { type: 'REVIEW.OPEN', plan, owner: agent.owner, hasChannel: settings.review !== undefined, ...(durable ? { durable } : {}) }
      const take: TakeTurn = (turned) =>
        perform(
          agent,
          event,
          ['review.opened', 'review.refused'],
          (told, attachment) => (told.type === 'review.refused' ? Promise.reject(new Error(told.message)) : turned(told.review, attachment)),
          (attachment) => {
            if (signal?.aborted) throw new Error(abortMessage(signal))
            // Detached while the call waited for its turn: it fails like a review open then (R63).
            if (attachment.generation !== generation) throw new Error(REVIEW_MESSAGES.reloaded)
          },
          // Like a detach: the review it would have opened was reloaded away (R60, R63).
          REVIEW_MESSAGES.reloaded,
        )
      return new Promise<ExitToolResult>((resolve, reject) => {
        startCall(createActor(exitCallMachine, { input: { settle: { resolve, reject }, signal, abortMessage, reviewId: durable?.reviewId } }), take)
      })
    } catch (error) {
      return Promise.reject(error)
    }
  }

  /** `answerReview` (R80): its checks, then the chart's decision in the agent's turn. */
  function answerReview(agent: PlanAgent, reviewId: string, answer: unknown, options: AnswerReviewOptions = {}): Promise<'approved' | 'keep-planning' | 'left'> {
    if (disposed) return Promise.reject(new Error(DISPOSED_MESSAGE))
    // The answer is untrusted: copied once, here, into plain data, which is checked and then
    // decided on (a getter that throws or changes its mind is no data); only the verdict reaches
    // the chart, whose actions must not throw (R62).
    let verdict: ReviewVerdict
    let data: unknown
    let toldInResult: boolean
    try {
      data = copyAnswer(answer)
      toldInResult = options?.toldInResult === true
      if (typeof reviewId !== 'string' || !isWellFormedAnswer(data)) throw new Error(MALFORMED_ANSWER_MESSAGE)
    } catch {
      return Promise.reject(new Error(MALFORMED_ANSWER_MESSAGE))
    }
    let plan: string | undefined
    try {
      // Comments must quote the plan of the review they answer (R100); a review that is not open
      // is refused by the chart in the agent's turn.
      const open = openDurableReview(attachmentOf(agent).snapshot)
      plan = open?.reviewId === reviewId ? open.plan : undefined
    } catch (error) {
      return Promise.reject(error) // the agent cannot attach (R61)
    }
    try {
      verdict = readReviewAnswer(data, plan, settings.decisions)
    } catch (error) {
      return Promise.reject(error instanceof ReviewCommentError ? error : new Error(MALFORMED_ANSWER_MESSAGE))
    }
    return closeDurableReview(agent, reviewId, verdict, toldInResult) as Promise<'approved' | 'keep-planning' | 'left'>
  }

  /** `answerReviewByPolicy` (R95): the durable review open now, closed by the policy's verdict in the agent's turn. */
  function answerReviewByPolicy(agent: PlanAgent, policy: HeadlessReviewPolicy, options: AnswerReviewOptions = {}): Promise<PolicyReviewAnswer | null> {
    try {
      const verdict = policyVerdict(headlessReviewPolicy(policy))
      if (disposed) throw new Error(DISPOSED_MESSAGE)
      const open = openDurableReview(attachmentOf(agent).snapshot)
      if (open === null) return Promise.resolve(null)
      const { reviewId } = open
      return closeDurableReview(agent, reviewId, verdict, options?.toldInResult === true).then((outcome) => ({
        reviewId,
        outcome: outcome as PolicyReviewAnswer['outcome'],
      }))
    } catch (error) {
      return Promise.reject(error)
    }
  }

  /**
   * Closes the durable review `reviewId` with `verdict` in the agent's turn (R80, R95): refused
   * when it is not open; resolves with the recorded outcome once the record has landed.
   */
  function closeDurableReview(agent: PlanAgent, reviewId: string, verdict: ReviewVerdict, toldInResult: boolean): Promise<ReviewOutcome> {
    return new Promise<ReviewOutcome>((resolve, reject) => {
      const answered = { resolve, reject }
      /** The call's turn settles once the answer has (calls settle in order, §1). */
      const settled = new Promise<void>((done) => {
        answered.resolve = (outcome) => (resolve(outcome), done())
        answered.reject = (error) => (reject(error), done())
      })
      const take: TakeTurn = (turned) =>
        perform(agent, { type: 'REVIEW.ANSWER', reviewId, verdict, toldInResult }, ['answer.recording', 'answer.refused'], (told, attachment) => {
          if (told.type === 'answer.refused') throw new Error(told.message)
          turned(told.review, attachment)
          return settled
        })
      startCall(createActor(answerCallMachine, { input: { settle: answered, reviewId } }), take)
    })
  }

  /** What a boundary tells the model: a durable review's outcome, then a switch (R32, R81). */
  function narration(news: Parameters<typeof newsText>[0] | null, notice: 'entering' | 'leaving' | null): UserMessage[] {
    const messages: UserMessage[] = []
    if (news !== null) messages.push(createNarration(newsText(news)))
    if (notice !== null) messages.push(createNotice(notice))
    return messages
  }

  const command = createPlanCommand({ select })

  return {
    get: (agent) => planModeState(attachmentOf(agent).snapshot),
    set: async (agent, active) => (await select(agent, active)).outcome,
    stepBoundary: (agent, { signal, handoff } = {}) =>
      perform(agent, { type: 'STEP_BOUNDARY', aborted: signal?.aborted === true, ...(handoff === true ? { handoff } : {}) }, ['boundary'], ({ active, notice, news }) => {
        return { section: active ? section : '', messages: notice === null && news === null ? [] : narration(news, notice) }
      }),
    section: (agent) => (agent !== undefined && isEffectivelyActive(attachmentOf(agent).snapshot) ? section : ''),
    exitTool: createExitTool(executeExitTool, durableReviews ? 'durable' : 'channel'),
    openReview: (agent) => openDurableReview(attachmentOf(agent).snapshot),
    answerReview,
    answerReviewByPolicy,
    decisions: settings.decisions,
    approvedPlan(agent) {
      attachmentOf(agent) // after dispose it fails as every call naming an agent does (R60)
      return approvedPlanOf(agent.session, agent.id)
    },
    command: {
      ...command,
      // After a reload the command fails like every call naming an agent (R60), rather than
      // reporting a mode change that could not happen (R57).
      run: (input) => (disposed ? Promise.reject(new Error(DISPOSED_MESSAGE)) : command.run(input)),
    },
    projection: planProjection,
    actor: (agent) => attachmentOf(agent).actor,
    detach(agent) {
      if (disposed) throw new Error(DISPOSED_MESSAGE)
      const attachment = attachments.get(agent.id)
      if (attachment) close(attachment).catch(() => {}) // a failing close is reported by its own calls
    },
    async dispose() {
      if (disposed) return
      disposed = true
      resolveDisposal()
      await Promise.all([...new Set(attachments.values())].map(close))
    },
  }
}
