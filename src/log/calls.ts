import { checkpointStart } from './checkpoint.js'
import { EMPTY_PLAN_LOG_FOLD, PLAN_REVIEW_EVENT, evolvePlanLog, type PlanLogFold, type ReviewOutcome } from './kinds.js'
import type { SessionLog } from './session.js'

/** How the log closed a durable review that a framework's tool call opened (R82, R87). */
export interface ClosedCallReview {
  readonly outcome: ReviewOutcome
  /** The keep-planning feedback of the record that closed it, when it had one (R45). */
  readonly feedback?: string
  /** Whether that record says the outcome is told in the call's result (R81): no boundary tells it. */
  readonly toldInResult: boolean
}

/**
 * The durable reviews agent `agentId`'s session has closed, by the tool call whose request opened
 * them (R82, R87) and then by the plan that call presented, read through the one fold
 * (`evolvePlanLog`): a review closes where the fold's open review closes, so by its first closing
 * record (R80: a later one, or a lost racing answer's, changes nothing). A call id and a plan stand
 * for the latest review requested with both: a model that reuses ids opens a new review under an
 * id an earlier, closed one had, and that new one is not closed; the card of the earlier review,
 * which shows the earlier plan, keeps that review's result (an outcome is a decision on the plan
 * a card shows, never on another plan presented under the same id). When the session's events
 * start after its checkpoint (R76), the fold starts from the checkpoint's, which knows the review
 * open there and the call that opened it.
 */
export function closedReviewsByCall(session: SessionLog, agentId?: string): Map<string, Map<string, ClosedCallReview>> {
  const { events } = session
  const start = checkpointStart(session, agentId)
  let fold: PlanLogFold = start === null ? EMPTY_PLAN_LOG_FOLD : { ...EMPTY_PLAN_LOG_FOLD, review: start.checkpoint.review }
  const closed = new Map<string, Map<string, ClosedCallReview>>()
  for (let i = start?.from ?? 0; i < events.length; i++) {
    const event = events[i]!
    if (event.type !== PLAN_REVIEW_EVENT) continue // no other kind opens or closes a durable review
    const before = fold.review
    fold = evolvePlanLog(fold, event)
    const after = fold.review
    if (after === before) continue
    if (after.open !== null) {
      // A new request: its call's earlier review of the same plan, closed or not, no longer answers for the call.
      if (after.open.callId !== undefined) closed.get(after.open.callId)?.delete(after.open.plan)
      continue
    }
    const open = before.open
    if (open?.callId === undefined || after.closed === null) continue
    const { feedback, toldInResult } = event.data as { feedback?: unknown; toldInResult?: unknown } // the fold closed the review with this record
    const byPlan = closed.get(open.callId) ?? new Map<string, ClosedCallReview>()
    byPlan.set(open.plan, { outcome: after.closed.outcome, ...(typeof feedback === 'string' ? { feedback } : {}), toldInResult: toldInResult === true })
    closed.set(open.callId, byPlan)
  }
  return closed
}
