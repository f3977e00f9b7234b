import type { ReviewAnswer } from '../types.js'
import { APPROVE_LABEL, KEEP_PLANNING_LABEL } from './review.js'

/**
 * The answers a host gives a durable review on the user's behalf when the user's choice reached
 * it another way (a framework's own tool approval, R82): the review's one question (`plan-review`,
 * R43) with one option selected by its label, the labels `PLAN_MODE_TEXTS.review.labels` holds.
 * `readReviewAnswer` reads each back as the decision its label stands for (R44, R45).
 */

/** Approve (R44): consent to the plan under review. */
export function approveAnswer(): ReviewAnswer {
  return { answers: [{ id: 'plan-review', selected: [APPROVE_LABEL] }] }
}

/**
 * Keep planning (R45), with `feedback` as the custom text when it is not blank (a blank one is
 * none: the model is told to revise the plan without it).
 */
export function keepPlanningAnswer(feedback?: string): ReviewAnswer {
  const custom = feedbackOf(feedback)
  return { answers: [{ id: 'plan-review', selected: [KEEP_PLANNING_LABEL], ...(custom === undefined ? {} : { custom }) }] }
}

/** A reason given with a refusal as keep-planning feedback (R45, R82): blank means none. */
export function feedbackOf(reason: string | undefined): string | undefined {
  return reason === undefined || reason.trim() === '' ? undefined : reason
}
