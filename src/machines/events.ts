import type { PlanProblem, ReviewSettlement } from '../review.js'
import type { ReviewAnswer, SessionEvent, SetOutcome } from '../types.js'
import {
  PLAN_MODE_EVENT,
  REQUEST_HEADER_EVENT,
  TURN_END_EVENT,
  TURN_START_EVENT,
  type PlanReviewData,
} from '../log/events.js'
import { validatePlanModeEvent } from '../log/fold.js'

/** Events the plan-mode statechart accepts. Named for the domain (SPEC sketch). */
export type PlanModeEvent =
  /** A user selection (`set`, `/plan`): R8–R13. */
  | { type: 'SELECT'; active: boolean }
  /** The host is about to derive a new step's request (R14–R20, R32). */
  | { type: 'STEP_BOUNDARY'; aborted: boolean }
  /**
   * `exit_plan_mode` was called. The facts the chart cannot know are measured by the caller:
   * the plan's shape problem, whether the agent is owned, whether a review channel exists.
   */
  | {
      type: 'REVIEW.OPEN'
      plan: string
      title: string
      problem: PlanProblem | undefined
      owned: boolean
      hasChannel: boolean
    }
  /** An answered review's turn has come (reviews settle in order with set and boundaries). */
  | { type: 'REVIEW.SETTLE' }
  /** The exit tool call's own signal aborted (R46). */
  | { type: 'REVIEW.ABORT'; message: string }
  /** `dispose` or `detach`: open reviews fail as reloaded (R60, R63). */
  | { type: 'RELOAD' }
  /** Observed log events (only those that can matter reach the chart, R70). */
  | { type: 'LOG.PLAN_MODE'; active: boolean }
  | { type: 'LOG.TURN_START' }
  | { type: 'LOG.TURN_END' }
  | { type: 'LOG.REQUEST_HEADER' }
  /** Raised by the chart itself. */
  | { type: 'REVIEW.APPROVED' }
  | { type: 'BOUNDARY.RESOLVED' }
  | { type: 'BOUNDARY.FLUSH_FAILED' }

/** What a step boundary tells the model about the mode, if anything (R32, R33). */
export type NoticeKind = 'entering' | 'leaving'

/** Events the chart emits to the facade (`actor.on`): the results of the operations. */
export type PlanModeEmitted =
  | { type: 'set.settled'; outcome: SetOutcome }
  | { type: 'set.failed'; error: unknown }
  | { type: 'boundary.settled'; active: boolean; notice: NoticeKind | null }
  | { type: 'review.rejected'; message: string }
  | { type: 'review.opened' }
  | { type: 'review.answered' }
  | { type: 'review.settled'; settlement: ReviewSettlement }

/** The ports the chart's invoked actors reach: bound per agent by the facade. */
export interface PlanModeActorInputs {
  appendPlanMode: { active: boolean }
  recordReview: PlanReviewData
  askReview: { plan: string }
}

/** What the invoked actors resolve with. */
export interface PlanModeActorOutputs {
  appendPlanMode: SessionEvent
  recordReview: SessionEvent
  askReview: ReviewAnswer
}

const TO_CHART: Readonly<Record<string, (event: SessionEvent) => PlanModeEvent>> = {
  [PLAN_MODE_EVENT]: (event) => {
    validatePlanModeEvent(event)
    return { type: 'LOG.PLAN_MODE', active: (event.data as { active: boolean }).active }
  },
  [TURN_START_EVENT]: () => ({ type: 'LOG.TURN_START' }),
  [TURN_END_EVENT]: () => ({ type: 'LOG.TURN_END' }),
  [REQUEST_HEADER_EVENT]: () => ({ type: 'LOG.REQUEST_HEADER' }),
}

/**
 * The chart's event for a log event appended after attach, or undefined for the events that
 * cannot matter to it (R70: dropped before they reach the actor). The command events and
 * `plan/review` only matter to a replay (R64): live, the chart itself made those decisions.
 * @throws on an invalid `plan/mode` (R61).
 */
export function toChartEvent(event: SessionEvent): PlanModeEvent | undefined {
  return Object.hasOwn(TO_CHART, event.type) ? TO_CHART[event.type]!(event) : undefined
}
