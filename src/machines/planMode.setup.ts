/**
 * The plan-mode chart's extended state, guards and actions (`planModeSetup`); the chart itself,
 * its states and transitions, is `planMode.machine.ts`. Every guard and action is named as a
 * sentence of the spec (docs/spec.md R1–R72).
 */
import { and, assign, emit, enqueueActions, not, or, raise, setup, stateIn } from 'xstate'
import type { NoticeKind, PlanModeEmitted, PlanModeEvent, ReviewResult } from './planMode.events.js'
import {
  appendPlanMode,
  askReview,
  requestReview,
  forgetPending,
  recordReview,
  rememberPending,
  warn,
  type PlanModePorts,
} from './planMode.effects.js'
import {
  REVIEW_MESSAGES,
  answerClosedMessage,
  answerNotOpenMessage,
  closedReviewMessage,
  errorMessage,
  isTooLarge,
  lacksLeadingHeading,
  planTitle,
} from '../plan/review.js'
import { leavesPlanMode, reviewNews, type OpenPlanReview, type PlanLogRestore, type ReviewNews, type ReviewOutcome } from '../log/kinds.js'
import type { SetOutcome } from '../types.js'


/** The chart's extended state. JSON data, but for the agent's ports and a failed append's error. */
export interface PlanModeContext {
  /** K: what the model was last told about the mode; null before anything was told (R30). */
  told: boolean | null
  /** The open review: its plan, title, and once decided, how it ends. */
  review: OpenReview | null
  /** How many reviews this actor opened: numbers them, so each exit call hears of its own. */
  reviews: number
  /** The last durable review closed, for refusing a late answer (R80). */
  lastClosed?: { reviewId: string; outcome: ReviewOutcome } | null
  /** A durable review's outcome the model has not been told yet: the next boundary tells it (R81). */
  news?: ReviewNews | null
  /**
   * The logged `/plan` runs heard live whose `command/done` has not come yet, by command id: the
   * selection each one makes (R86). Absent while none is outstanding.
   */
  heardRuns?: Readonly<Record<string, boolean>>
  /** How long a reload or detach waits for the work in flight before abandoning it, in ms (R73). */
  closeTimeout: number
  /** The agent's ports (bound at attach; see `planMode.effects.ts`). */
  ports: PlanModePorts
}

/** An open review. A durable one (R79) has the `durable` part: the log holds it, not this actor. */
export interface OpenReview {
  number: number
  plan: string
  title: string
  result: ReviewResult | null
  durable?: { reviewId: string; callId?: string; version?: number }
  /**
   * Another process's durable request that the log reported while ours was being appended (R79):
   * the review the log holds open until ours lands, and the open one if ours fails. (Its closing
   * records in that window are not followed.)
   */
  heard?: OpenPlanReview
  /**
   * What the log reported after the record that closed this durable review, while our own record
   * of it was in flight (R80): a `plan/mode` (consent's selection was resolved since: R16, R58) or a
   * request header (a step ran since: the outcome was told there, R81, and K follows F, R30). The
   * review concludes once our record settles, as a replay reads the log (R64): without them.
   */
  afterClosing?: { planMode?: true; requestHeader?: true }
}

/** The bounded wait of a reload or detach when the host configures none (R73). */
export const DEFAULT_CLOSE_TIMEOUT_MS = 5000

/** What the abandoned work's operation fails with, and the one warning (R73). */
export function abandonedMessage(closeTimeout: number): string {
  return `plan-mode: the session log did not settle within ${closeTimeout} ms of a reload or detach; work in flight was abandoned`
}

/**
 * The context of an actor that has no result yet: K and the durable reviews as the log tells them
 * (R31, R64, R79–R81; a new agent's when there is no `fold`), the review the log holds open being
 * the first this actor numbers.
 */
export function initialContext(ports: PlanModePorts, closeTimeout: number = DEFAULT_CLOSE_TIMEOUT_MS, fold?: PlanLogRestore): PlanModeContext {
  const open = fold?.review.open ?? null
  const durable = open === null ? undefined : open.callId === undefined ? { reviewId: open.reviewId, version: open.version } : { reviewId: open.reviewId, version: open.version, callId: open.callId }
  const context: PlanModeContext = {
    told: fold?.told ?? null,
    review: open === null ? null : { number: 1, plan: open.plan, title: open.title, result: null, durable },
    reviews: open === null ? 0 : 1,
    closeTimeout,
    ports,
  }
  // Absent rather than null while the log holds no durable review, and added after the literal
  // (a spread would cost the object its in-object fields): every idle agent pays for each field
  // of its context (R70: memory per idle agent).
  if (fold?.review.closed) context.lastClosed = fold.review.closed
  if (fold?.review.news) context.news = fold.review.news
  return context
}

/**
 * A recorded outcome as a review result: what a call would have failed with (R45, R48), and who
 * decided it when a headless policy did (R94, R95).
 */
function resultOfRecord(outcome: ReviewOutcome, feedback: string | undefined, toldInResult: boolean, by?: 'policy', fresh?: boolean): ReviewResult {
  const told = toldInResult ? { toldInResult } : {}
  const policy = by === 'policy' ? { by } : {}
  if (outcome === 'approved') return { outcome, ...(fresh === true ? { fresh: true as const } : {}), ...told, ...policy }
  if (outcome === 'keep-planning') return { outcome, error: closedReviewMessage(outcome, feedback), ...(feedback === undefined ? {} : { feedback }), ...told, ...policy }
  // A durable review's record carries no error text: its outcome's own text, as a call would fail with it.
  return { outcome, error: closedReviewMessage(outcome), ...told, ...policy }
}

/** What the call waiting for a review's closing settles with (R47–R49, R80): `lost` when another record won. */
function closedReport(review: OpenReview | null, lost: boolean) {
  const result = review?.result ?? { outcome: 'failed' as const, error: REVIEW_MESSAGES.unreadableFailure }
  return { type: 'review.closed' as const, review: review?.number ?? 0, result, ...(lost ? { lost: true as const } : {}) }
}

/** The tag of every state in which a log append is in flight. */
export const APPENDING_TAG = 'appending'

/**
 * E, the effective state (§0: P's target when P exists, else F), is active in exactly these
 * configurations: a pending entry, or F active with no selection waiting (an idle commit in
 * flight has not changed F yet). The guards read this list; the service's selector
 * (`isEffectivelyActive`, planMode.view.ts) reads the state value by hand, as `section` runs on
 * every step, and test/view.test.ts holds the two equal for every configuration.
 */
export const EFFECTIVELY_ACTIVE = [
  { intent: { pending: 'entering' } },
  { mode: 'active', intent: 'logged' },
  { mode: 'active', intent: 'committing' },
] as const

/** A guard's reference: the selection asks for `active` (R8). */
export const selects = (active: boolean) => ({ type: 'selects', params: { active } }) as const

/**
 * An action that enqueues XState's built-in actions only (`assign`, `raise`) when its condition
 * holds: typed on its own, since the action map it belongs to is still being inferred.
 */
type BuiltInsOnly = Parameters<typeof enqueueActions<PlanModeContext, PlanModeEvent, undefined, PlanModeEvent, never, never, never, never, PlanModeEmitted>>[0]
const builtIns = (collect: BuiltInsOnly) => enqueueActions<PlanModeContext, PlanModeEvent, undefined, PlanModeEvent, never, never, never, never, PlanModeEmitted>(collect)

/** The chart's types, guards and actions, each named as a sentence of the spec. */
export const planModeSetup = setup({
  types: {} as {
    context: PlanModeContext
    events: PlanModeEvent
    emitted: PlanModeEmitted
  },
  actors: { askReview },
  delays: {
    /** R73: the bound on a reload's or detach's wait for the work in flight. */
    closeTimeout: ({ context }) => context.closeTimeout,
  },
  // `stateIn` takes state values, not `#planMode.…` ids: XState parses an id character by character
  // and walks the chart on every evaluation, while a value is matched against the snapshot's as is.
  guards: {
    /** The selection's target is `params.active`. */
    selects: ({ event }, params: { active: boolean }) => event.type === 'SELECT' && event.active === params.active,
    isLoggedActive: stateIn({ mode: 'active' }),
    isLoggedInactive: stateIn({ mode: 'inactive' }),
    hasOpenTurn: stateIn({ turn: 'open' }),
    isAborted: ({ event }) => event.type === 'STEP_BOUNDARY' && event.aborted,
    /** No selection waits: the boundary has nothing to flush (R14). */
    hasNoPendingSelection: stateIn({ intent: 'logged' }),
    /** K = `params.active`: the model was last told that state (R30). */
    wasTold: ({ context }, params: { active: boolean }) => context.told === params.active,
    /** E, the effective state, is active (§0): one of `EFFECTIVELY_ACTIVE`. */
    isEffectivelyActive: or(EFFECTIVELY_ACTIVE.map((value) => stateIn(value))),
    /** x = E (R8). */
    selectsEffectiveMode: or([and([selects(true), 'isEffectivelyActive']), and([selects(false), not('isEffectivelyActive')])]),
    /** x = F. */
    selectsLoggedMode: or([and([selects(true), 'isLoggedActive']), and([selects(false), 'isLoggedInactive'])]),
    /** A logged `plan/mode` moves F (R3: one that repeats F changes nothing). */
    flipsLoggedMode: or([and(['logsActive', 'isLoggedInactive']), and(['logsInactive', 'isLoggedActive'])]),
    /** A step boundary's flush is in flight: its answer is the mode region's (R16, R18). */
    isFlushing: or([stateIn({ intent: { pending: { entering: 'flushing' } } }), stateIn({ intent: { pending: { leaving: 'flushing' } } })]),
    /** The intent's own append is in flight: an answered review waits for it (§1). */
    isSelectionAppending: or([
      stateIn({ intent: 'committing' }),
      stateIn({ intent: { pending: { entering: 'flushing' } } }),
      stateIn({ intent: { pending: { leaving: 'flushing' } } }),
    ]),
    /** No review is open: a selection heard from the log does not reach into one (R86). */
    hasNoOpenReview: stateIn({ review: 'idle' }),
    /**
     * A heard `/plan` run succeeded, selecting `params.active` (R86): its `command/done` now, or
     * the success held back while this chart's own append was in flight, taken once it settled.
     */
    heardSelects: ({ context, event }, params: { active: boolean }) =>
      event.type === 'COMMAND.SELECTED'
        ? event.active === params.active
        : event.type === 'LOG.COMMAND_DONE' && event.success && context.heardRuns?.[event.commandId] === params.active,
    /** A review is open and its outcome is not decided: a user switch closes it (R48, R80). */
    canSupersedeReview: stateIn({ review: { open: 'undecided' } }),
    /** No durable review's outcome waits to be told (R81). */
    hasNoNews: ({ context }) => context.news == null,
    /** The exit call opens a durable review: the log holds it (R79). */
    opensDurably: ({ event }) => event.type === 'REVIEW.OPEN' && event.durable !== undefined,
    /** The answer names the open durable review (R80). */
    answersThisReview: ({ context, event }) => event.type === 'REVIEW.ANSWER' && context.review?.durable?.reviewId === event.reviewId,
    /** A record of the open durable review (R80); the first one the log holds closes it. */
    closesThisReview: ({ context, event }) => event.type === 'LOG.REVIEW_CLOSED' && context.review?.durable?.reviewId === event.reviewId,
    /** Another durable review's request: the latest one is open (R79). */
    requestsAnotherReview: ({ context, event }) =>
      event.type === 'LOG.REVIEW_REQUESTED' && context.review?.durable?.reviewId !== event.review.reviewId,
    /** Another process's request the log reported while our request or record was being appended (R79, R80). */
    hasHeardRequest: ({ context }) => context.review?.heard !== undefined,
    /**
     * Another process's record of the open review has the outcome of ours in flight (R80): the
     * same outcome, feedback, telling and decider (R81, R95, R101).
     */
    recordsOurOutcome: ({ context, event }) => {
      const own = context.review?.result
      if (event.type !== 'LOG.REVIEW_CLOSED' || own == null) return false
      const other = resultOfRecord(event.outcome, event.feedback, event.toldInResult, event.by, event.fresh)
      return (
        other.outcome === own.outcome &&
        other.feedback === own.feedback &&
        other.toldInResult === own.toldInResult &&
        other.by === own.by &&
        other.fresh === own.fresh
      )
    },
    /** The model hears this approval in the call's result (a channel review's, or told in the result: R47, R81). */
    isToldApproval: ({ context }) =>
      leavesPlanMode(context.review?.result?.outcome) && (context.review!.durable === undefined || context.review!.result!.toldInResult === true),
    /** R42.4 */
    lacksLeadingHeading: ({ event }) => event.type === 'REVIEW.OPEN' && lacksLeadingHeading(event.plan),
    /** R42.5 */
    isPlanTooLarge: ({ event }) => event.type === 'REVIEW.OPEN' && isTooLarge(event.plan),
    /** R42.7: the caller is owned by another live agent (a non-empty `owner`). */
    isOwnedByAnotherAgent: ({ event }) => event.type === 'REVIEW.OPEN' && typeof event.owner === 'string' && event.owner !== '',
    /** R42.8 */
    lacksReviewChannel: ({ event }) => event.type === 'REVIEW.OPEN' && !event.hasChannel,
    logsActive: ({ event }) => event.type === 'LOG.PLAN_MODE' && event.active,
    /** R64: the log's F is active. */
    restoresActive: ({ event }) => event.type === 'RESTORE' && event.fold.active,
    /** R64, R5: the log's latest of turn/start, turn/end is a turn/start. */
    restoresOpenTurn: ({ event }) => event.type === 'RESTORE' && event.fold.openTurn,
    /** R64: P's target differs from F: P is that selection. */
    restoresPending: ({ event }, params: { active: boolean }) =>
      event.type === 'RESTORE' && event.pending === params.active && event.fold.active !== params.active,
    /** R79: the log holds a durable review open. */
    restoresOpenReview: ({ event }) => event.type === 'RESTORE' && event.fold.review.open !== null,
    logsInactive: ({ event }) => event.type === 'LOG.PLAN_MODE' && !event.active,
    /** The review leaves plan mode: approved, or left without carrying the plan out (R47, R101). */
    isApproved: ({ context }) => leavesPlanMode(context.review?.result?.outcome),
    /** An abort closes only the review its own call opened (a late abort of an earlier call is ignored). */
    isAbortOfThisReview: ({ context, event }) => event.type === 'REVIEW.ABORT' && context.review?.number === event.review,
    /**
     * Nothing is in flight: no review but one the log holds, no selection still to replay (the
     * review region is `following` then), no append (R60, R63, R79: the actor may stop).
     */
    hasNoWorkInFlight: and([
      or([stateIn({ review: 'idle' }), stateIn({ review: { open: { undecided: 'awaiting' } } })]),
      not('isSelectionAppending'),
    ]),
  },
  actions: {
    appendPlanMode,
    recordReview,
    requestReview,
    warn,
    rememberPending,
    forgetPending,
    /** `set`'s result (R8–R10). */
    reportSelection: emit((_, { outcome }: { outcome: SetOutcome }) => ({ type: 'selected' as const, outcome })),
    /** `set` rejects with the log's error (R11). */
    reportSelectionFailure: emit(({ event }) => ({ type: 'selected' as const, error: (event as { error?: unknown }).error })),
    /**
     * The boundary's result under the state in force, telling the model of a switch only when it
     * was told otherwise before (R30, R32, R35, R36).
     */
    reportNarration: emit(({ context, event }, { active }: { active: boolean }) => {
      // A durable review's outcome goes first (R81); an approval is not told to a model that the
      // user put back in plan mode, and when told it says plan mode is off, so no leaving notice.
      const news = context.news != null && !(leavesPlanMode(context.news.outcome) && active) ? context.news : null
      const notice: NoticeKind | null =
        context.told !== null && context.told !== active && !leavesPlanMode(news?.outcome) ? (active ? 'entering' : 'leaving') : null
      // R102: a request that starts a fresh context tells the approval in its first message; the
      // boundary does not tell it a second time. A flush's landing carries its boundary's handoff.
      const handoff = (event.type === 'STEP_BOUNDARY' || event.type === 'PLAN_MODE.APPENDED') && event.handoff === true
      const told = handoff && news?.outcome === 'approved' ? null : news
      return { type: 'boundary' as const, active, notice, news: told }
    }),
    /** The boundary told the state in force: K := it, the news is told (R30, R81). */
    narrate: assign((_, { active }: { active: boolean }) => ({ told: active, news: null })),
    /** The boundary's result without telling anything, K unchanged (R15, R19). */
    reportQuietBoundary: emit((_, { active }: { active: boolean }) => ({ type: 'boundary' as const, active, notice: null, news: null })),
    /** K := `active`: a request header told the model F, or an approval told it inactive (R30). */
    assignTold: assign((_, { active }: { active: boolean }) => ({ told: active })),
    /** R81: a step ran after the record: its writer told the outcome (unless it was ours, after a failed flush). */
    settleNewsAtHeader: assign({ news: null }),
    /** A logged `/plan` run: its selection waits for the run's `command/done` (R86). */
    noteRun: assign(({ context, event }) => {
      if (event.type !== 'LOG.COMMAND_RUN') return {}
      return { heardRuns: { ...context.heardRuns, [event.commandId]: event.active } }
    }),
    /** R86: our append settled: the heard `/plan` whose success waited for it is taken now. */
    takeHeldSelection: raise((_, { active }: { active: boolean }) => ({ type: 'COMMAND.SELECTED' as const, active })),
    /** The run settled (taken or not): it is no longer outstanding (R86). */
    forgetRun: assign(({ context, event }) => {
      if (event.type !== 'LOG.COMMAND_DONE' || context.heardRuns === undefined || !Object.hasOwn(context.heardRuns, event.commandId)) return {}
      const { [event.commandId]: _settled, ...rest } = context.heardRuns
      return { heardRuns: Object.keys(rest).length === 0 ? undefined : rest }
    }),
    /** R42: the call fails with `message`; nothing changes. */
    refuseReview: emit((_, { message }: { message: string }) => ({ type: 'review.refused' as const, message })),
    openReview: assign(({ context, event }) => {
      if (event.type !== 'REVIEW.OPEN') return {}
      const number = context.reviews + 1
      const review: OpenReview = { number, plan: event.plan, title: planTitle(event.plan) ?? 'Plan', result: null }
      if (event.durable !== undefined) review.durable = { ...event.durable }
      return {
        reviews: number,
        review,
        // A new request: whatever the model had not heard was told before it asked again (R81).
        // The last review closed is forgotten only once the request is in the log (R80: "no
        // review was requested since"): a request that fails leaves it as a replay reads it.
        ...(event.durable !== undefined ? { news: null } : {}),
      }
    }),
    /** The exit call hears that its review is open, and under which number (after `openReview`). */
    reportOpened: emit(({ context }) => ({ type: 'review.opened' as const, review: context.reviews })),
    /**
     * The log reported a request while ours is being appended. Ours: its seq is the review's
     * version (R79). Another process's: the log holds that one open until ours lands, and it is
     * the open review if ours fails (R79), or once our record of the review it followed settled
     * (R80); a request drops the untold outcome and the last review closed (R80, R81).
     */
    noteRequestSeq: assign(({ context, event }) => {
      if (event.type !== 'LOG.REVIEW_REQUESTED' || context.review?.durable === undefined) return {}
      if (event.review.reviewId !== context.review.durable.reviewId) return { review: { ...context.review, heard: event.review }, news: null, lastClosed: null }
      return { review: { ...context.review, durable: { ...context.review.durable, version: event.review.version } } }
    }),
    /**
     * Our request failed while the log holds another process's request open (R79): the idle
     * review region adopts it, as when the log reports a request.
     */
    replayHeardRequest: raise(({ context }) => ({ type: 'LOG.REVIEW_REQUESTED' as const, review: context.review!.heard! })),
    /**
     * Our request is in the log: the open review (R79), unless the log reported another process's
     * request after it (that one is, under this review's number: the call that opened this one is
     * submitted all the same). A review was requested since the last one closed (R80), and the
     * model asked again (R81).
     */
    requestLanded: assign(({ context }) => {
      if (context.review === null) return { lastClosed: null, news: null }
      const { heard, ...review } = context.review
      const version = review.durable?.version
      // Another process's request the log holds after ours is the open one (R79: the last request).
      if (heard !== undefined && version !== undefined && heard.version > version) {
        const { reviewId, title, plan, callId } = heard
        const durable = callId === undefined ? { reviewId, version: heard.version } : { reviewId, version: heard.version, callId }
        return { review: { ...review, plan, title, durable }, lastClosed: null, news: null }
      }
      return { review, lastClosed: null, news: null }
    }),
    /** The exit call of the durable review is submitted: the log holds its request (R79). */
    reportLanded: emit(({ context }) => ({ type: 'review.landed' as const, review: context.review?.number ?? 0 })),
    /** The request record failed: the call fails with the log's error (R79); `failRequest` follows. */
    reportRequestFailed: emit(({ context, event }) => ({
      type: 'review.closed' as const,
      review: context.review?.number ?? 0,
      result: { outcome: 'failed' as const, error: errorMessage((event as { error?: unknown }).error) },
    })),
    /** The request record failed: nothing is open (R79). */
    failRequest: assign({ review: null }),
    /** A durable review the log holds open, requested by another process or restored (R79). */
    adoptReview: assign(({ context, event }) => {
      if (event.type !== 'LOG.REVIEW_REQUESTED') return {}
      const number = context.reviews + 1
      const { reviewId, title, plan, version, callId } = event.review
      const durable = callId === undefined ? { reviewId, version } : { reviewId, version, callId }
      return { reviews: number, review: { number, plan, title, result: null, durable }, news: null, lastClosed: null }
    }),
    /** `answerReview` names no open durable review (R80): refused, nothing changes. */
    refuseAnswer: emit(({ context, event }) => {
      const reviewId = event.type === 'REVIEW.ANSWER' ? event.reviewId : ''
      const { lastClosed } = context
      const refused =
        lastClosed?.reviewId === reviewId ? answerClosedMessage(reviewId, lastClosed.outcome) : answerNotOpenMessage(reviewId)
      return { type: 'answer.refused' as const, message: refused }
    }),
    /** The answer, read as R44 and R45 read a channel's (R80), or a headless policy's decision (R95). */
    decideAnswer: assign(({ context, event }) => {
      if (event.type !== 'REVIEW.ANSWER' || context.review === null) return {}
      const { verdict } = event
      const feedback = verdict.outcome === 'keep-planning' ? verdict.feedback : undefined
      const comments = verdict.outcome === 'keep-planning' && verdict.comments !== undefined ? { comments: verdict.comments } : {}
      const fresh = verdict.outcome === 'approved' && verdict.fresh === true
      const result = { ...resultOfRecord(verdict.outcome, feedback, event.toldInResult, verdict.by, fresh), ...comments }
      return { review: { ...context.review, result } }
    }),
    /** The answer's call waits for the record of the review numbered so (after `decideAnswer`). */
    reportAnswering: emit(({ context }) => ({ type: 'answer.recording' as const, review: context.review?.number ?? 0 })),
    /** Another process recorded the open review's outcome: it closes with that outcome (R80). */
    adoptOutcome: assign(({ context, event }) => {
      if (event.type !== 'LOG.REVIEW_CLOSED' || context.review === null) return {}
      return { review: { ...context.review, result: resultOfRecord(event.outcome, event.feedback, event.toldInResult, event.by, event.fresh) } }
    }),
    /**
     * An answer's record failed: the answer fails with the log's error, the review stays open (R80),
     * under a new number, so that the next answer waits for its own record, not this failure.
     */
    failAnswer: assign(({ context }) => ({
      reviews: context.reviews + 1,
      review: context.review && { number: context.reviews + 1, plan: context.review.plan, title: context.review.title, result: null, durable: context.review.durable! },
    })),
    /** The user's answer, as the ask effect read it (R44–R46). */
    decideReview: assign(({ context, event }) => {
      const result = (event as { output?: ReviewResult }).output ?? { outcome: 'failed', error: REVIEW_MESSAGES.unreadableFailure }
      return { review: context.review && { ...context.review, result } }
    }),
    /** The review ends without an answer: aborted, superseded or reloaded (R46, R48, R60). */
    closeReview: assign(({ context, event }) => {
      const result: ReviewResult =
        event.type === 'REVIEW.ABORT'
          ? { outcome: 'aborted', error: event.message }
          : event.type === 'SELECT'
            ? { outcome: 'superseded', error: REVIEW_MESSAGES.superseded }
            : { outcome: 'reloaded', error: REVIEW_MESSAGES.reloaded }
      return { review: context.review && { ...context.review, result } }
    }),
    /** An answer's record failed, but another record closed the review meanwhile: that one is the outcome, and the answer fails with the log's error (R80). */
    reportAnswerOutlived: emit(({ context, event }) => ({ ...closedReport(context.review, false), failed: (event as { error?: unknown }).error })),
    /** The answer's record failed: the answer fails with the log's error; the review stays open (R80). */
    reportAnswerFailed: emit(({ context, event }) => ({
      type: 'review.closed' as const,
      review: context.review?.number ?? 0,
      result: { outcome: 'failed' as const },
      failed: (event as { error?: unknown }).error,
    })),
    /** The exit call that opened the review, or the answer that closed it, settles with its result (R47–R49, R80). */
    reportClosed: emit(({ context }) => closedReport(context.review, false)),
    /** As `reportClosed`, for a review another process's record of another outcome closed before ours landed: ours lost (R80). */
    reportLost: emit(({ context }) => closedReport(context.review, true)),
    /** The review is closed; a durable review's outcome is remembered (R80, R81). */
    concludeReview: assign(({ context }) => {
      const review = context.review
      const result = review?.result ?? { outcome: 'failed' as const, error: REVIEW_MESSAGES.unreadableFailure }
      if (review?.durable === undefined) return { review: null }
      // R81: a step ran after the record (whichever writer ran it): the outcome was told there.
      const news = review.afterClosing?.requestHeader === true ? null : reviewNews(result.outcome, result.feedback, result.toldInResult === true)
      return {
        review: null,
        lastClosed: { reviewId: review.durable.reviewId, outcome: result.outcome },
        ...(news !== null ? { news } : {}),
      }
    }),
    /** Consent: the intent follows (R47); unless the log logged a `plan/mode` after the record (R16, R58). */
    raiseApproval: builtIns(({ context, enqueue }) => {
      if (context.review?.afterClosing?.planMode !== true) enqueue.raise({ type: 'REVIEW.APPROVED' })
    }),
    /** An approval told in the call's result: K := inactive (R30, R81); unless a request header followed the record (K is F's). */
    tellApprovalInResult: assign(({ context }) => (context.review?.afterClosing?.requestHeader === true ? {} : { told: false })),
    /** The log reported a `plan/mode` after the record that closed the review (R16, R58): consent has nothing left to select. */
    notePlanModeAfterClosing: assign(({ context }) =>
      context.review === null ? {} : { review: { ...context.review, afterClosing: { ...context.review.afterClosing, planMode: true as const } } },
    ),
    /** The log reported a request header after the record that closed the review: a step told its outcome (R81). */
    noteHeaderAfterClosing: assign(({ context }) =>
      context.review === null ? {} : { review: { ...context.review, afterClosing: { ...context.review.afterClosing, requestHeader: true as const } } },
    ),
    /** A request heard while a switch closed the review is adopted after the switch followed (R48, R79). */
    heldBehindSelection: raise(({ event }) => ({
      type: 'LOG.REVIEW_REQUESTED' as const,
      review: (event as Extract<PlanModeEvent, { type: 'LOG.REVIEW_REQUESTED' }>).review,
    })),
    /** The selection that closed the review now follows R8–R10 (R48). */
    followSelection: raise((_, { active }: { active: boolean }) => ({ type: 'SELECT' as const, active })),
    /** R73: one warning, and the operation waiting for the abandoned work fails with it. */
    warnAbandoned: ({ context }) => context.ports.warn(abandonedMessage(context.closeTimeout), undefined),
    reportAbandoned: emit(({ context }) => ({ type: 'abandoned' as const, error: abandonedMessage(context.closeTimeout) })),
    raiseAbandoned: raise({ type: 'ABANDONED' } as const),
    /** R73: the review whose record never settled fails as reloaded; the selection that closed it, if one did, is dropped. */
    reportReviewAbandoned: emit(({ context }) => ({
      type: 'review.closed' as const,
      review: context.review?.number ?? 0,
      result: { outcome: 'reloaded' as const, error: REVIEW_MESSAGES.reloaded },
    })),
    /** R73, R80: an answer whose record was abandoned fails with the abandoned message, as the operation waiting for it. */
    reportAnswerAbandoned: emit(({ context }) => ({
      type: 'review.closed' as const,
      review: context.review?.number ?? 0,
      result: { outcome: 'reloaded' as const, error: REVIEW_MESSAGES.reloaded },
      failed: new Error(abandonedMessage(context.closeTimeout)),
    })),
    abandonReview: assign({ review: null }),
  },
})
