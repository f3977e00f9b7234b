import { DISPOSED_MESSAGE } from '../machines/calls.machine.js'
import { DISPOSED_BEFORE_TURN_MESSAGE } from '../service.js'
import { EXIT_PLAN_MODE_DESCRIPTION, EXIT_PLAN_MODE_RESULT_TEXT, EXIT_PLAN_MODE_SUBMITTED_TEXT, toldInResult } from './exit-tool.js'
import { HEADLESS_STOP_MESSAGE } from './headless.js'
import { NOTICE_TEXTS } from './narration.js'
import {
  APPROVE_FRESH_LABEL,
  APPROVE_LABEL,
  APPROVED_NEWS_TEXT,
  KEEP_PLANNING_LABEL,
  LEAVE_LABEL,
  REVIEW_MESSAGES,
  planTitle,
  reviewQuestion,
} from './review.js'

/**
 * Every text plan mode shows the model or the user, in one table grouped by where it shows
 * (docs/spec.md §1 gives each byte for byte): hosts and apps compare tool results and notices
 * with these, render a review's options, or match an error's message. The table is frozen.
 *
 * @example
 * if (message.text === PLAN_MODE_TEXTS.notices.entering) showBadge('plan')
 */
export const PLAN_MODE_TEXTS = Object.freeze({
  /** What the model sees of the `exit_plan_mode` tool. */
  tool: Object.freeze({
    /** The tool's description (R41), in both modes (R40). */
    description: EXIT_PLAN_MODE_DESCRIPTION,
    /** The result a host shows the model when the tool approved (R50). */
    result: EXIT_PLAN_MODE_RESULT_TEXT,
    /** The result when a durable review's request was recorded (R79). */
    submitted: EXIT_PLAN_MODE_SUBMITTED_TEXT,
  }),
  /** What the model is told at a step boundary, as a user message it did not write. */
  notices: Object.freeze({
    /** The user switched to plan mode since the model's last request (R33). */
    entering: NOTICE_TEXTS.entering,
    /** The user switched back to the default mode (R33). */
    leaving: NOTICE_TEXTS.leaving,
    /** A durable review was approved and not told in the call's result (R81). */
    approved: APPROVED_NEWS_TEXT,
  }),
  /** The plan review: what the user chooses from, and what a review call answers or fails with. */
  review: Object.freeze({
    /** The options' labels (R43, R101): `approve` and `keepPlanning` always, the other two with `decisions: 'all'`. */
    labels: Object.freeze({ approve: APPROVE_LABEL, keepPlanning: KEEP_PLANNING_LABEL, approveFresh: APPROVE_FRESH_LABEL, leave: LEAVE_LABEL }),
    /** Every message an exit call's review fails or answers the model with, by reason (R42, R45, R46, R48, R60). */
    messages: Object.freeze(REVIEW_MESSAGES),
    /** The one question a review asks (R43, R101), for hosts that render a durable review themselves. */
    question: reviewQuestion,
    /** A plan's title as a review shows it: the text of its first markdown heading, or `undefined`. */
    title: planTitle,
    /**
     * What the model gets when a durable review's outcome is told in the exit call's result (R81,
     * R135), for hosts that keep the call waiting (LangGraph's `interrupt()`, a tool approval):
     * `{ outcome, isError, text }` from the closed review's record or `planHistory` entry.
     * @example
     * const review = planHistory(session.events).find((plan) => plan.reviewId === reviewId)!
     * const { isError, text } = PLAN_MODE_TEXTS.review.toldInResult(review)
     */
    toldInResult,
  }),
  /** What the service's calls fail with. */
  errors: Object.freeze({
    /** A call made after `dispose()` (R60). */
    disposed: DISPOSED_MESSAGE,
    /** An operation called before `dispose()` whose turn had not come (R60). */
    disposedBeforeTurn: DISPOSED_BEFORE_TURN_MESSAGE,
    /** The review error of `headlessReview({ policy: 'stop' })` (R94). */
    headlessStop: HEADLESS_STOP_MESSAGE,
  }),
})
