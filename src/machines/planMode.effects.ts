import { fromPromise, type AnyActorRef } from 'xstate'
import { PLAN_MODE_EVENT, PLAN_REVIEW_EVENT, type PlanReviewData } from '../log/kinds.js'
import { REVIEW_MESSAGES, errorMessage, isDismissal, isPolicyDismissal, keepPlanningMessage, readReviewAnswer, type ReviewDecisions } from '../plan/review.js'
import type { ReviewAnswer } from '../types.js'
import type { PlanModeEvent, ReviewResult } from './planMode.events.js'

/**
 * The chart's effects: everything it does outside itself, in one file. Each agent's ports reach
 * them as data (`context.ports`, set at attach), never through a global. Every port call is
 * wrapped so that a throw or a rejection becomes an event the chart handles: an action that
 * throws would stop the actor (R62).
 */

/** What one agent's chart reaches outside itself; bound per agent by the service at attach. */
export interface PlanModePorts {
  /** Appends to the agent's session log; may be asynchronous (a database). */
  append(type: string, data: unknown): unknown
  /** Asks the user to review a plan (R43); `signal` aborts when the review is left. */
  ask(plan: string, signal: AbortSignal): Promise<ReviewAnswer>
  /** Which decisions the service's reviews offer (R101): what an answer is read against. */
  readonly decisions: ReviewDecisions
  /** The logger port (R19, R49); must not throw. */
  warn(message: string, error: unknown): void
  /** The pending store: the selection now waiting for a boundary; must not throw. */
  rememberPending(active: boolean): void
  /** The pending store: no selection waits any more; must not throw. */
  forgetPending(): void
}

const never = new Promise<never>(() => {})

/** The ports of a chart that is not attached to an agent (a bare actor, a graph traversal). */
export const UNATTACHED_PORTS: PlanModePorts = {
  append: () => never,
  ask: () => never,
  decisions: 'approve-or-keep',
  warn: () => {},
  rememberPending: () => {},
  forgetPending: () => {},
}

/** Whether a port's answer is asynchronous: any object with a `then` method. */
export function isThenable(value: unknown): value is PromiseLike<unknown> {
  return typeof (value as PromiseLike<unknown> | null)?.then === 'function'
}

/**
 * Starts an append and sends its completion back to the chart. A synchronous log answers in the
 * same call (the event is processed right after the current one); a throw or a rejection becomes
 * the `failed` event.
 */
function startAppend(
  ports: PlanModePorts,
  self: AnyActorRef,
  type: string,
  data: unknown,
  done: PlanModeEvent,
  failed: (error: unknown) => PlanModeEvent,
): void {
  const answer = (event: PlanModeEvent) => {
    if (self.getSnapshot().status === 'active') self.send(event)
  }
  try {
    const written = ports.append(type, data)
    // Promise.resolve adopts any thenable, and a `then` that throws becomes a rejection.
    if (isThenable(written)) Promise.resolve(written).then(() => answer(done), (error: unknown) => answer(failed(error)))
    else answer(done)
  } catch (error) {
    answer(failed(error))
  }
}

type EffectArgs = {
  context: {
    ports: PlanModePorts
    review: { plan: string; title: string; result: ReviewResult | null; durable?: { reviewId: string; callId?: string } } | null
  }
  self: AnyActorRef
}

/**
 * Appends `plan/mode {active}` (R10, R16); answers `PLAN_MODE.APPENDED` or `PLAN_MODE.APPEND_FAILED`.
 * A boundary's flush lands with that boundary's `handoff` (R102): its narration reads it there.
 */
export function appendPlanMode({ context, self, event }: EffectArgs & { event: PlanModeEvent }, { active }: { active: boolean }): void {
  const appended: PlanModeEvent = event.type === 'STEP_BOUNDARY' && event.handoff === true ? { type: 'PLAN_MODE.APPENDED', handoff: true } : { type: 'PLAN_MODE.APPENDED' }
  startAppend(context.ports, self, PLAN_MODE_EVENT, { active }, appended, (error) => ({
    type: 'PLAN_MODE.APPEND_FAILED',
    error,
  }))
}

/** Records the closed review as `plan/review` (R49); answers `REVIEW.RECORDED` or `REVIEW.RECORD_FAILED`. */
export function recordReview({ context, self }: EffectArgs): void {
  const { plan = '', title = '', result, durable } = context.review ?? {}
  const data: PlanReviewData = {
    outcome: result?.outcome ?? 'failed',
    ...(durable !== undefined ? { reviewId: durable.reviewId } : {}),
    title,
    plan,
    ...(result?.feedback !== undefined ? { feedback: result.feedback } : {}),
    ...(result?.comments !== undefined ? { comments: result.comments } : {}),
    ...(result?.fresh === true ? { fresh: true as const } : {}),
    ...(result?.toldInResult === true ? { toldInResult: true } : {}),
    // A headless policy's decision is never taken for a user's (R94, R95); a user's record has no `by`.
    ...(result?.by === 'policy' ? { by: 'policy' as const } : {}),
  }
  startAppend(context.ports, self, PLAN_REVIEW_EVENT, data, { type: 'REVIEW.RECORDED' }, (error) => ({
    type: 'REVIEW.RECORD_FAILED',
    error,
  }))
}

/** Appends a durable review's request (R79); answers `REVIEW.RECORDED` or `REVIEW.RECORD_FAILED`. */
export function requestReview({ context, self }: EffectArgs): void {
  const { plan = '', title = '', durable } = context.review ?? {}
  const data: PlanReviewData = {
    outcome: 'requested',
    reviewId: durable?.reviewId ?? '',
    title,
    plan,
    ...(durable?.callId !== undefined ? { callId: durable.callId } : {}),
  }
  startAppend(context.ports, self, PLAN_REVIEW_EVENT, data, { type: 'REVIEW.RECORDED' }, (error) => ({
    type: 'REVIEW.RECORD_FAILED',
    error,
  }))
}

/** The logger port, with the failure that the event carries (R19, R49). */
export function warn({ context, event }: EffectArgs & { event: unknown }, { message }: { message: string }): void {
  context.ports.warn(message, (event as { error?: unknown }).error)
}

/** The pending store: `active` now waits for a boundary. */
export function rememberPending({ context }: EffectArgs, { active }: { active: boolean }): void {
  context.ports.rememberPending(active)
}

/** The pending store: nothing waits any more. */
export function forgetPending({ context }: EffectArgs): void {
  context.ports.forgetPending()
}

/**
 * Asks the user and reads the answer (R43–R46). The answer is read here, inside the promise, so
 * that a malformed or hostile answer (a throwing getter) becomes a `failed` review instead of an
 * exception in an action. Resolves with the review's result, never rejects.
 */
export const askReview = fromPromise<ReviewResult, { ports: PlanModePorts; plan: string }>(async ({ input, signal }) => {
  try {
    // Comments must quote the plan under review (R100): one that does not fails the review.
    const verdict = readReviewAnswer(await input.ports.ask(input.plan, signal), input.plan, input.ports.decisions)
    const by = verdict.by === 'policy' ? ({ by: 'policy' } as const) : {} // a headless policy answered (R94)
    if (verdict.outcome === 'approved') return { outcome: 'approved', ...(verdict.fresh ? { fresh: true as const } : {}), ...by }
    if (verdict.outcome === 'left') return { outcome: 'left', error: REVIEW_MESSAGES.left, ...by } // R101
    return verdict.feedback === undefined
      ? { outcome: 'keep-planning', error: keepPlanningMessage(undefined), ...by }
      : { outcome: 'keep-planning', error: keepPlanningMessage(verdict.feedback), feedback: verdict.feedback, ...(verdict.comments ? { comments: verdict.comments } : {}), ...by }
  } catch (error) {
    try {
      if (isDismissal(error)) {
        return { outcome: 'dismissed', error: REVIEW_MESSAGES.dismissed, ...(isPolicyDismissal(error) ? { by: 'policy' as const } : {}) }
      }
      return { outcome: 'failed', error: errorMessage(error) }
    } catch {
      // Even the failure cannot be read (a hostile error object).
      return { outcome: 'failed', error: REVIEW_MESSAGES.unreadableFailure }
    }
  }
})
