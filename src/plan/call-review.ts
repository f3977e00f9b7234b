import { closedReviewsByCall } from '../log/calls.js'
import type { AnswerReviewOptions, OpenReviewView, PlanAgent } from '../types.js'
import { planArgument, toldInResult, type ExitPlanModeTool, type ExitToolResult } from './exit-tool.js'
import { keepPlanningMessage } from './review.js'
import { approveAnswer, feedbackOf, keepPlanningAnswer } from './review-answer.js'

/**
 * Durable reviews bound to a framework's tool call (R82, R87), for frameworks whose own tool
 * approval asks the user (AI SDK 6's `needsApproval`): the card a client shows for the call is
 * the review, answered by the call's id. Every decision is here: which review a call's approval or
 * denial answers, what is consent, what closes a review nobody can answer any more, and what a
 * closed review's call results in. An adapter only finds the calls, approvals and denials in its
 * framework's messages and hands these results back to it.
 *
 * @example
 * // needsApproval: a review opened for the call needs the user's approval (R82)
 * await planMode.callReviews.request(agent, toolCallId, input)
 */
export interface CallReviews {
  /**
   * A new exit call `callId` (R82): runs `exitTool.execute(input, { agent, callId })`, so a review
   * opened for it (R79) waits for the approval of the call's card. A call that repeats the id of
   * the call under review is refused and closes that review as keep planning, told in the result
   * (no card can tell which plan it shows any more).
   * @throws (synchronously) when the agent cannot be read (R60, R61).
   * @throws (rejects) with the call's refusal (R42, R82), or the log's error when the closing record
   *   could not be appended (the review stays open).
   */
  request(agent: PlanAgent, callId: string, input: unknown): Promise<ExitToolResult>
  /**
   * The user approved the card of call `callId`, which shows the call's `input` (R82): consent to
   * that plan only. Approves the open review bound to the call, told in the result, and resolves
   * `{ approved: true }` once recorded.
   * @throws (rejects) when no open review is bound to the call; when the call's plan is not the
   *   review's (the review is closed as keep planning); with the log's error when a record fails.
   */
  approve(agent: PlanAgent, callId: string, input: unknown): Promise<ExitToolResult>
  /**
   * The user denied the cards of these calls, by call id, each showing its call's `input`, with
   * the reason given (R82): a denial is a decision on the plan its card shows, so the open review
   * bound to one of these calls keeps planning, told in the result, with the reason as feedback
   * when it is not blank, only when that call's plan is the review's (with ids reused, an earlier
   * card's denial answers nothing of a review open for another plan). Resolves when nothing is
   * open for them, or once recorded.
   * @throws (rejects) with the log's error when the record fails; when the agent cannot be read.
   */
  deny(agent: PlanAgent, denials: ReadonlyMap<string, CallDenial>): Promise<void>
  /** What the model reads of a denied call (R45, R82): the keep-planning text of the denial's reason. */
  denialText(reason: string | undefined): string
  /**
   * The results of the calls whose review the log has closed (R87), read once: `resultOf(callId,
   * input)` is the result of the latest review requested with that call id for the plan `input`
   * carries (the plan the call's card shows): `{ output: { approved: true } }` for an approval,
   * else `{ errorText }`, the text the call would have failed with; undefined while that review is
   * open, or when there is none. With ids reused, each card gets its own plan's result.
   */
  settled(agent: PlanAgent): SettledCallReviews
}

/** A denied call's card (R82): the call's input, which the card showed, and the reason the user gave. */
export interface CallDenial {
  readonly input: unknown
  readonly reason?: string | undefined
}

/** The closed call reviews of `CallReviews.settled` (R87). */
export interface SettledCallReviews {
  /** The result of the closed review of call `callId` whose plan `input` carries, or undefined. */
  resultOf(callId: string, input: unknown): CallReviewResult | undefined
}

/** A closed call review's result (R87): the approval's output, or the error the call fails with. */
export type CallReviewResult = { output: { approved: true } } | { errorText: string }

/** What `CallReviews` needs of the service: its public durable-review operations. */
export interface CallReviewService {
  readonly exitTool: Pick<ExitPlanModeTool, 'execute' | 'reviews'>
  openReview(agent: PlanAgent): OpenReviewView | null
  answerReview(agent: PlanAgent, reviewId: string, answer: unknown, options?: AnswerReviewOptions): Promise<unknown>
}

/** What a durable exit call fails with when its approval is not consent (R82). */
export const CALL_REVIEW_MESSAGES = Object.freeze({
  noMatch: (callId: string) => `the approval of tool call "${callId}" matches no open plan review; nothing was approved`,
  otherPlan: (callId: string) =>
    `the approval of tool call "${callId}" is for another plan than the one under review; nothing was approved, and that review is closed: present the plan again`,
  repeatedId: (callId: string) =>
    `exit_plan_mode call "${callId}" repeats the id of the call under review; it is refused, and that review is closed: nothing was approved. Present the plan again, in one call.`,
})

/** The call reviews of a service (`service()` is read when an operation runs). */
export function createCallReviews(service: () => CallReviewService): CallReviews {
  /**
   * Closes the open review as Keep planning, told in the result (R44: what is not consent keeps
   * planning), so that no review waits for a card that cannot answer it. The error the call fails
   * with: `text`, or the log's error when the record could not be appended (the review stays open).
   */
  async function closeWithoutConsent(agent: PlanAgent, open: OpenReviewView, text: string): Promise<Error> {
    try {
      await service().answerReview(agent, open.reviewId, keepPlanningAnswer(), { toldInResult: true })
      return new Error(text)
    } catch (error) {
      return error instanceof Error ? error : new Error(String(error))
    }
  }

  return {
    request(agent, callId, input) {
      const open = service().openReview(agent)
      if (open !== null && open.callId === callId) {
        return closeWithoutConsent(agent, open, CALL_REVIEW_MESSAGES.repeatedId(callId)).then((error) => Promise.reject(error))
      }
      return service().exitTool.execute(input, { agent, callId })
    },
    async approve(agent, callId, input) {
      const open = service().openReview(agent)
      if (open === null || open.callId !== callId) throw new Error(CALL_REVIEW_MESSAGES.noMatch(callId))
      if (planArgument(input) !== open.plan) throw await closeWithoutConsent(agent, open, CALL_REVIEW_MESSAGES.otherPlan(callId))
      await service().answerReview(agent, open.reviewId, approveAnswer(), { toldInResult: true })
      return { approved: true }
    },
    async deny(agent, denials) {
      const open = service().exitTool.reviews === 'durable' ? service().openReview(agent) : null
      const denial = open?.callId === undefined ? undefined : denials.get(open.callId)
      // A denial of another plan's card (a reused id) is no decision on this review's plan.
      if (open === null || denial === undefined || planArgument(denial.input) !== open.plan) return
      await service().answerReview(agent, open.reviewId, keepPlanningAnswer(denial.reason), { toldInResult: true })
    },
    denialText: (reason) => keepPlanningMessage(feedbackOf(reason)),
    settled(agent) {
      const closed = closedReviewsByCall(agent.session, agent.id)
      return {
        resultOf(callId, input) {
          const plan = planArgument(input)
          const review = plan === undefined ? undefined : closed.get(callId)?.get(plan)
          if (review === undefined) return undefined
          if (review.outcome === 'approved') return { output: { approved: true } }
          return { errorText: toldInResult(review).text }
        },
      }
    },
  }
}
