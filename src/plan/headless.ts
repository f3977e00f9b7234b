import type { ReviewAnswer, ReviewChannel } from '../types.js'
import { APPROVE_LABEL, type ReviewVerdict } from './review.js'

/**
 * Headless review policies (R94, R95): for runs with nobody to ask (CI bots, batch jobs), a plan
 * review is decided by a fixed policy instead of a user, and the log says so. There are exactly
 * two, and neither is silent: `'stop'` dismisses the review (the model stops in plan mode and the
 * plan stays in the log), `'approve'` approves it with `by: 'policy'` on the record.
 */

/** What a review decided by nobody does: dismiss it and stop (`'stop'`), or approve it (`'approve'`). */
export type HeadlessReviewPolicy = 'stop' | 'approve'

/** Options of {@link headlessReview}. */
export interface HeadlessReviewOptions {
  /** `'stop'` or `'approve'`; anything else is refused with a `TypeError` (R94). */
  policy: HeadlessReviewPolicy
}

/** The message of the error a `'stop'` channel rejects with (its `code` is `'ASK_CANCELLED'`, its `by` is `'policy'`). */
export const HEADLESS_STOP_MESSAGE = "the headless review policy 'stop' dismissed the plan review"

/** The string form of an untrusted value, for the `TypeError` (`String(value)`, or the object tag when that throws). */
function describePolicy(value: unknown): string {
  try {
    return String(value)
  } catch {
    return Object.prototype.toString.call(value)
  }
}

/**
 * Checks a headless review policy (R94).
 * @throws TypeError `headless review policy must be 'stop' or 'approve'; got <String(value)>`
 */
export function headlessReviewPolicy(value: unknown): HeadlessReviewPolicy {
  if (value === 'stop' || value === 'approve') return value
  throw new TypeError(`headless review policy must be 'stop' or 'approve'; got ${describePolicy(value)}`)
}

/** How a policy closes a durable review (R95): approved or dismissed, `by: 'policy'`. */
export function policyVerdict(policy: HeadlessReviewPolicy): ReviewVerdict {
  return policy === 'approve' ? { outcome: 'approved', by: 'policy' } : { outcome: 'dismissed', by: 'policy' }
}

/**
 * A ready review channel for runs with nobody to ask (R94). Give it as `createPlanMode`'s
 * `review` option. Every plan review it is asked is decided at once, by the policy:
 * - `'stop'`: it rejects with an `Error` of `PLAN_MODE_TEXTS.errors.headlessStop`, `code: 'ASK_CANCELLED'`
 *   and `by: 'policy'`, so the exit call fails with R46's dismissal text (the model stops and
 *   waits) and the review is recorded `plan/review { outcome: 'dismissed', title, plan, by: 'policy' }`;
 *   the run ends in plan mode with the plan in the log.
 * - `'approve'`: it answers `Approve` with `by: 'policy'`, so the call is approved as a user's
 *   consent is (R47) and recorded `plan/review { outcome: 'approved', title, plan, by: 'policy' }`.
 *
 * For durable reviews (`review: 'durable'`) use `PlanMode.answerReviewByPolicy` instead (R95).
 * @throws TypeError `headless review policy must be 'stop' or 'approve'; got <String(policy)>`
 * for any other policy, when the channel is made.
 */
export function headlessReview(options: HeadlessReviewOptions): ReviewChannel {
  const policy = headlessReviewPolicy((options as Partial<HeadlessReviewOptions> | null | undefined)?.policy)
  return {
    ask() {
      if (policy === 'approve') {
        const answer: ReviewAnswer = { answers: [{ id: 'plan-review', selected: [APPROVE_LABEL] }], by: 'policy' }
        return Promise.resolve(answer)
      }
      return Promise.reject(Object.assign(new Error(HEADLESS_STOP_MESSAGE), { code: 'ASK_CANCELLED', by: 'policy' as const }))
    },
  }
}
