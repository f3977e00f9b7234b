import { createActor } from 'xstate'
import type { PlanModeActor } from './attachment.js'
import { DISPOSED_MESSAGE } from './machines/calls.machine.js'
import { serveAgents } from './agents.js'
import { planModeSettings, type PlanModeOptions } from './options.js'
import { planProjection, type PlanProjection } from './log/projection.js'
import type { PlanModeEvent } from './machines/planMode.events.js'
import { answerCallMachine, exitCallMachine, startCall, type TakeTurn } from './machines/calls.machine.js'
import { isClosing, isEffectivelyActive, openDurableReview, planModeState } from './machines/planMode.view.js'
import { createPlanCommand, type PlanCommand } from './plan/command.js'
import { createExitTool, planArgument, type ExitPlanModeTool, type ExitToolContext, type ExitToolResult } from './plan/exit-tool.js'
import { createNarration, createNotice } from './plan/narration.js'
import {
  MALFORMED_ANSWER_MESSAGE,
  REVIEW_MESSAGES,
  abortMessage,
  copyAnswer,
  isWellFormedAnswer,
  newsText,
  readReviewAnswer,
  DISMISS_MALFORMED_MESSAGE,
  ReviewCommentError,
  type ReviewDecisions,
  type ReviewVerdict,
} from './plan/review.js'
import { headlessReviewPolicy, policyVerdict, type HeadlessReviewPolicy } from './plan/headless.js'
import { planStep, type PlanStep, type PlanStepOptions, type PlanStepService } from './plan/step.js'
import { createCallReviews, type CallReviews } from './plan/call-review.js'
import { presentedVersion } from './log/history.js'
import type { ApprovedPlan, ReviewOutcome } from './log/kinds.js'
import { approvedPlanOf } from './log/checkpoint.js'
import type {
  AnswerReviewOptions,
  OpenReviewView,
  PlanAgent,
  PlanModeState,
  SetOutcome,
  StepBoundaryOptions,
  StepBoundaryResult,
  ReviewAnswer,
  UserMessage,
} from './types.js'

export type { PlanModeActor } from './attachment.js'
export { DISPOSED_MESSAGE } from './machines/calls.machine.js'
export { DISPOSED_BEFORE_TURN_MESSAGE } from './agents.js'

/** `set` with anything but a boolean fails with this, never a silent `'noop'` (R8). */
const SET_NEEDS_BOOLEAN = 'plan mode set(agent, active) needs a boolean active'


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
  /**
   * `stepBoundary` for a framework adapter (R14): runs the boundary and decides what the step runs
   * under: the state in force (R18, R93), the system prompt's part (R18, or the pinned approved
   * plan, R99), the notices, and the handoff due (R102). See `PlanStep`.
   */
  step(agent: PlanAgent, options?: PlanStepOptions): Promise<PlanStep>
  /** Durable reviews bound to a framework's tool call and its own tool approval (R82, R87). */
  readonly callReviews: CallReviews
  /** The always-registered `exit_plan_mode` tool (R40–R52, R79). */
  readonly exitTool: ExitPlanModeTool
  /** The durable review the agent's log holds open, or null (R79): what a UI renders after any restart. */
  openReview(agent: PlanAgent): OpenReviewView | null
  /**
   * Answers the durable review `reviewId` from any process attached to the agent's log (R80):
   * resolves with the recorded outcome, rejects with the refusal (nothing changed). `answer` is
   * typed as the `ReviewAnswer` a UI builds, and still checked when the call runs (R80): it comes
   * from a client, so a value of another shape is refused, never trusted.
   */
  answerReview(agent: PlanAgent, reviewId: string, answer: ReviewAnswer, options?: AnswerReviewOptions): Promise<'approved' | 'keep-planning' | 'left'>
  /**
   * The user dismissed the durable review `reviewId` to speak instead (R136), from any process
   * attached to the agent's log: recorded `plan/review { outcome: 'dismissed', reviewId, title,
   * plan }` as the user's (no `by`, unlike a policy's, R95); plan mode stays as it is. Resolves
   * `'dismissed'` once recorded; rejects as `answerReview` does (nothing changed). With
   * `toldInResult`, the waiting exit call is told R46's text (`PLAN_MODE_TEXTS.review.toldInResult`).
   */
  dismissReview(agent: PlanAgent, reviewId: string, options?: AnswerReviewOptions): Promise<'dismissed'>
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
 * Every call checks its arguments, sends the agent's chart an event in the agent's turn, waits
 * for what the chart tells, and selects from its snapshot; an exit call and an answer are call
 * actors (`calls.machine.ts`) that settle their callers.
 * @throws the option errors of `planModeSettings` (R37, R73, R76–R78, R101).
 */
export function createPlanMode(options: PlanModeOptions): PlanMode {
  const settings = planModeSettings(options)
  const { section } = settings
  const durableReviews = settings.reviews === 'durable'
  const agents = serveAgents(settings, settings.maxAttachedAgents)
  const { attachmentOf, perform } = agents
  const snapshotOf = (agent: PlanAgent) => attachmentOf(agent).snapshot

  /** A selection, with the state right after it (before any later queued operation runs). */
  function select(agent: PlanAgent, active: boolean): Promise<{ outcome: SetOutcome; state: PlanModeState }> {
    if (typeof active !== 'boolean') return Promise.reject(new TypeError(`${SET_NEEDS_BOOLEAN}; got ${typeof active}`))
    return perform(agent, { type: 'SELECT', active }, ['selected'], (told, attachment) => {
      if ('error' in told) throw told.error // R11
      return { outcome: told.outcome, state: planModeState(attachment.snapshot) }
    })
  }

  /** `exit_plan_mode` (R40–R52, R79): its checks, then an exit call in the agent's turn. */
  function executeExitTool(args: unknown, context: ExitToolContext = {}): Promise<ExitToolResult> {
    try {
      if (agents.isDisposed()) throw new Error(DISPOSED_MESSAGE)
      const { agent, signal, callId } = context ?? {}
      if (signal?.aborted) throw new Error(abortMessage(signal))
      if (!agent) throw new Error(REVIEW_MESSAGES.noAgent)
      const plan = planArgument(args)
      const calledOn = attachmentOf(agent) // a log that cannot attach fails the call first (R61)
      if (plan === undefined) throw new Error(REVIEW_MESSAGES.planNotString)
      // The attachment the review may open on: this one, or the next after a detach already made.
      const generation = calledOn.generation + (isClosing(calledOn.snapshot) ? 1 : 0)
      const durable = durableReviews ? { reviewId: globalThis.crypto.randomUUID(), ...(typeof callId === 'string' ? { callId } : {}) } : undefined
      const open: PlanModeEvent = { type: 'REVIEW.OPEN', plan, owner: agent.owner, hasChannel: settings.review !== undefined, ...(durable ? { durable } : {}) }
      const take: TakeTurn = (turned) =>
        perform(
          agent,
          open,
          ['review.opened', 'review.refused'],
          (told, attachment) => (told.type === 'review.refused' ? Promise.reject(new Error(told.message)) : turned(told.review, attachment)),
          (attachment) => {
            if (signal?.aborted) throw new Error(abortMessage(signal))
            // Detached while the call waited for its turn: it fails like a review open then (R63).
            if (attachment.generation !== generation) throw new Error(REVIEW_MESSAGES.reloaded)
          },
          REVIEW_MESSAGES.reloaded, // like a detach: the review it would have opened was reloaded away (R60, R63)
        )
      return new Promise((resolve, reject) => {
        startCall(createActor(exitCallMachine, { input: { settle: { resolve, reject }, signal, abortMessage, reviewId: durable?.reviewId } }), take)
      })
    } catch (error) {
      return Promise.reject(error)
    }
  }

  /**
   * Answers the durable review `reviewId` with `verdict` by an answer call in the agent's turn
   * (R80, R95): refused when it is not open; resolves with the recorded outcome once it landed.
   */
  function answer(agent: PlanAgent, reviewId: string, verdict: ReviewVerdict, toldInResult: boolean): Promise<ReviewOutcome> {
    return new Promise<ReviewOutcome>((resolve, reject) => {
      // The call's turn settles once the answer has: later calls settle after it (§1).
      let answered!: () => void
      const settled = new Promise<void>((done) => (answered = done))
      const settle = { resolve: (outcome: ReviewOutcome) => (resolve(outcome), answered()), reject: (error: unknown) => (reject(error), answered()) }
      const take: TakeTurn = (turned) =>
        perform(agent, { type: 'REVIEW.ANSWER', reviewId, verdict, toldInResult }, ['answer.recording', 'answer.refused'], (told, attachment) => {
          if (told.type === 'answer.refused') throw new Error(told.message)
          turned(told.review, attachment)
          return settled
        })
      startCall(createActor(answerCallMachine, { input: { settle, reviewId } }), take)
    })
  }

  const command = createPlanCommand({ select })

  /** The step boundary (R14–R20, R30–R36); `read` gets the state in force it leaves (R18) and its result. */
  function boundary<T>(agent: PlanAgent, { signal, handoff }: StepBoundaryOptions = {}, read: (active: boolean, result: StepBoundaryResult) => T): Promise<T> {
    return perform(agent, { type: 'STEP_BOUNDARY', aborted: signal?.aborted === true, ...(handoff === true ? { handoff } : {}) }, ['boundary'], ({ active, notice, news }) =>
      read(active, { section: active ? section : '', messages: notice === null && news === null ? [] : narration(news, notice) }),
    )
  }

  /** What `step` reads of this service (`planMode` is read when a step runs). */
  const stepService: PlanStepService = {
    decisions: settings.decisions,
    get: (agent) => planMode.get(agent),
    approvedPlan: (agent) => planMode.approvedPlan(agent),
    boundary: (agent, options) => boundary(agent, options, (active, result) => ({ ...result, active })),
  }

  const planMode: PlanMode = {
    get: (agent) => planModeState(snapshotOf(agent)),
    set: async (agent, active) => (await select(agent, active)).outcome,
    stepBoundary: (agent, options) => boundary(agent, options, (_, result) => result),
    step: (agent, options) => planStep(stepService, agent, options),
    callReviews: createCallReviews(() => planMode),
    section: (agent) => (agent !== undefined && isEffectivelyActive(snapshotOf(agent)) ? section : ''),
    exitTool: createExitTool(executeExitTool, durableReviews ? 'durable' : 'channel'),
    openReview: (agent) => openReviewView(agent, openDurableReview(snapshotOf(agent))),
    answerReview(agent, reviewId, answerGiven, options = {}) {
      try {
        if (agents.isDisposed()) throw new Error(DISPOSED_MESSAGE)
        const { data, toldInResult } = answerData(reviewId, answerGiven, options)
        // Comments must quote the plan of the review they answer (R100); a review that is not
        // open is refused by the chart in the agent's turn.
        const open = openDurableReview(snapshotOf(agent)) // the agent cannot attach (R61)
        const verdict = answerVerdict(data, open?.reviewId === reviewId ? open.plan : undefined, settings.decisions)
        return answer(agent, reviewId, verdict, toldInResult) as Promise<'approved' | 'keep-planning' | 'left'>
      } catch (error) {
        return Promise.reject(error)
      }
    },
    dismissReview(agent, reviewId, options = {}) {
      try {
        if (agents.isDisposed()) throw new Error(DISPOSED_MESSAGE)
        if (typeof reviewId !== 'string') throw new Error(DISMISS_MALFORMED_MESSAGE)
        return answer(agent, reviewId, { outcome: 'dismissed' }, options?.toldInResult === true) as Promise<'dismissed'>
      } catch (error) {
        return Promise.reject(error)
      }
    },
    answerReviewByPolicy(agent, policy, options = {}) {
      try {
        const verdict = policyVerdict(headlessReviewPolicy(policy))
        if (agents.isDisposed()) throw new Error(DISPOSED_MESSAGE)
        const open = openDurableReview(snapshotOf(agent))
        if (open === null) return Promise.resolve(null)
        const { reviewId } = open
        return answer(agent, reviewId, verdict, options?.toldInResult === true).then((outcome) => ({ reviewId, outcome: outcome as PolicyReviewAnswer['outcome'] }))
      } catch (error) {
        return Promise.reject(error)
      }
    },
    decisions: settings.decisions,
    approvedPlan(agent) {
      attachmentOf(agent) // after dispose it fails as every call naming an agent does (R60)
      return approvedPlanOf(agent.session, agent.id)
    },
    command: {
      ...command,
      // After a reload the command fails like every call naming an agent (R60), rather than
      // reporting a mode change that could not happen (R57).
      run: (input) => (agents.isDisposed() ? Promise.reject(new Error(DISPOSED_MESSAGE)) : command.run(input)),
    },
    projection: planProjection,
    actor: (agent) => attachmentOf(agent).actor,
    detach: agents.detach,
    dispose: agents.dispose,
  }
  return planMode
}

/**
 * The open review as `openReview` shows it (R79, R138): `version` the plan's version in its
 * episode (R96), `seq` the log position of its request, which the chart holds as the review's.
 */
function openReviewView(agent: PlanAgent, open: Omit<OpenReviewView, 'version'> | null): OpenReviewView | null {
  if (open === null) return null
  const { reviewId, title, plan, seq, callId } = open
  const version = presentedVersion(agent.session, reviewId, seq, agent.id)
  return callId === undefined ? { reviewId, title, plan, version, seq } : { reviewId, title, plan, version, seq, callId }
}

/** What a boundary tells the model: a durable review's outcome, then a switch (R32, R81). */
function narration(news: Parameters<typeof newsText>[0] | null, notice: 'entering' | 'leaving' | null): UserMessage[] {
  const messages: UserMessage[] = []
  if (news !== null) messages.push(createNarration(newsText(news)))
  if (notice !== null) messages.push(createNotice(notice))
  return messages
}

/**
 * `answerReview`'s answer, untrusted: copied once into plain data, which is checked and then
 * decided on (a getter that throws or changes its mind is no data); only the verdict reaches the
 * chart, whose actions must not throw (R62). @throws the malformed message (R80).
 */
function answerData(reviewId: unknown, answer: unknown, options: AnswerReviewOptions): { data: unknown; toldInResult: boolean } {
  try {
    const data = copyAnswer(answer)
    const toldInResult = options?.toldInResult === true
    if (typeof reviewId !== 'string' || !isWellFormedAnswer(data)) throw new Error(MALFORMED_ANSWER_MESSAGE)
    return { data, toldInResult }
  } catch {
    throw new Error(MALFORMED_ANSWER_MESSAGE)
  }
}

/** The verdict of an answer's data (R44, R45, R100, R101). @throws a comment's error, else the malformed message. */
function answerVerdict(data: unknown, plan: string | undefined, decisions: ReviewDecisions): ReviewVerdict {
  try {
    return readReviewAnswer(data, plan, decisions)
  } catch (error) {
    throw error instanceof ReviewCommentError ? error : new Error(MALFORMED_ANSWER_MESSAGE)
  }
}
