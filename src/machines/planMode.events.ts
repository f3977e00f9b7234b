import type { ReviewComment, SetOutcome } from '../types.js'
import type { PlanLogObservation, PlanLogRestore, ReviewNews, ReviewOutcome } from '../log/kinds.js'
import type { ReviewVerdict } from '../plan/review.js'

/** Events the plan-mode statechart accepts, named for the domain. */
export type PlanModeEvent =
  /** A user selection (`set`, `/plan`): R8–R13. */
  | { type: 'SELECT'; active: boolean }
  /**
   * The host is about to derive a new step's request (R14–R20, R32); `handoff` when that request
   * starts a fresh context that tells the plan approved into it (R102).
   */
  | { type: 'STEP_BOUNDARY'; aborted: boolean; handoff?: boolean }
  /**
   * `exit_plan_mode` was called with a string plan (R42). The chart checks 3–8 itself over this
   * data: the plan, the calling agent's owner, and whether the service has a review channel.
   */
  | { type: 'REVIEW.OPEN'; plan: string; owner: unknown; hasChannel: boolean; durable?: { reviewId: string; callId?: string } }
  /**
   * `answerReview`: the user's answer to the durable review `reviewId` (R80), as R44 and R45 read
   * it, or a headless policy's decision (R95); `toldInResult` when the host gives the outcome to
   * the model in the call's result (R81).
   */
  | { type: 'REVIEW.ANSWER'; reviewId: string; verdict: ReviewVerdict; toldInResult: boolean }
  /** The exit tool call's own signal aborted (R46); `review` is the number of the review it opened. */
  | { type: 'REVIEW.ABORT'; review: number; message: string }
  /** `dispose` or `detach`: open reviews fail as reloaded, then the actor stops (R60, R63). */
  | { type: 'RELOAD' }
  /**
   * Attach (R64): what the log says (`fold`, read by the one fold or from its end; the context
   * starts from it too) and P's target
   * (`pending`, as the host's pending store kept it, else the log's kept selection). The initial
   * states' guarded transitions take it; `restore.ts` sends it through XState's pure `transition`,
   * so that no entry action runs and nothing is appended.
   */
  | { type: 'RESTORE'; fold: PlanLogRestore; pending: boolean | null }
  /** Observed log events (only those that can matter reach the chart, R70), as the log's table reads them. */
  | PlanLogObservation
  /**
   * The log's answer to the chart's own appends (sent back by the append effects). A boundary's
   * flush that lands says whether that boundary's request starts a fresh context (`handoff`, R102).
   */
  | { type: 'PLAN_MODE.APPENDED'; handoff?: true }
  | { type: 'PLAN_MODE.APPEND_FAILED'; error: unknown }
  | { type: 'REVIEW.RECORDED' }
  | { type: 'REVIEW.RECORD_FAILED'; error: unknown }
  /** Raised by the chart itself. */
  | { type: 'REVIEW.APPROVED' }
  /**
   * A heard `/plan`'s success, held back while this chart's own `plan/mode` append was in flight,
   * is taken now that the append settled (R86).
   */
  | { type: 'COMMAND.SELECTED'; active: boolean }
  /** The close timeout expired: the work still in flight is no longer waited for (R73). */
  | { type: 'ABANDONED' }

/** What a step boundary tells the model about the mode, if anything (R32, R33). */
export type NoticeKind = 'entering' | 'leaving'

/** How a review ended, and what its call resolves with: consent, or the failure message (R49). */
export interface ReviewResult {
  outcome: ReviewOutcome
  /** The failure message; absent for an approval. */
  error?: string
  /** The non-blank custom text of a keep-planning answer (R45). */
  feedback?: string
  /** An approval into a fresh context (R101): the record says so, and the host hands the plan off. */
  fresh?: true
  /** The comments anchored to the plan that the feedback gives the model (R100), kept in the record. */
  comments?: ReviewComment[]
  /** A durable review's outcome the host gives the model in the call's result (R81). */
  toldInResult?: boolean
  /** A headless review policy decided the outcome, not the user: the record says so (R94, R95). */
  by?: 'policy'
}

/**
 * What the chart tells the calls that wait on it, emitted (`actor.on`, read by the call actors of
 * `calls.machine.ts`): an operation's result, and a review's landing and closing. Nothing of it is
 * kept in the chart's context.
 */
export type PlanModeEmitted =
  /** `set`'s result (R8–R10); `error` when the idle append failed: `set` rejects with it (R11). */
  | { type: 'selected'; outcome: SetOutcome }
  | { type: 'selected'; error: unknown }
  /** A step boundary's answer (R14–R20, R32). */
  | { type: 'boundary'; active: boolean; notice: NoticeKind | null; news: ReviewNews | null }
  /** R42's checks refused the exit call; nothing changed. */
  | { type: 'review.refused'; message: string }
  /** The exit call's review is open under the number `review`. */
  | { type: 'review.opened'; review: number }
  /** `answerReview` was refused (R80); nothing changed. */
  | { type: 'answer.refused'; message: string }
  /** The answer to the review numbered `review` is being recorded (R80). */
  | { type: 'answer.recording'; review: number }
  /** The durable review numbered `review` is in the log: its call is submitted (R79). */
  | { type: 'review.landed'; review: number }
  /**
   * The review numbered `review` closed with `result` (R47–R49, R80): `lost` when the log held
   * another answer first, `failed` when an answer's record failed (the answer fails with it).
   */
  | { type: 'review.closed'; review: number; result: ReviewResult; lost?: true; failed?: unknown }
  /** A reload or detach abandoned the work the waiting operation needed (R73). */
  | { type: 'abandoned'; error: string }
