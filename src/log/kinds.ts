import type { SessionEvent } from './session.js'

/**
 * The one home of the log's meaning: every event kind plan mode reads, what it means, and how
 * each reader takes it (`PLAN_LOG_KINDS`), and the one fold over it (`evolvePlanLog`). Replay,
 * restore from a checkpoint and its tail, the checkpoint, the approved plan, the episode (history,
 * handoff), the projection (`planProjection`), the violations (`foldViolations`), the live
 * observation (`observePlanLogEvent`), `plan-mode inspect` and the visualizer's timeline read
 * this table; none of them spells a kind's meaning again. Two readers read it from the end for
 * speed (attach of a whole log, R71: `restorePlanLog`; the approved plan at a step:
 * `latestApprovedPlan`); property tests hold both equal to the fold.
 */

/** The mode's only durable fact (R1): `{ active }`, a whole-value replacement. */
export const PLAN_MODE_EVENT = 'plan/mode'
/** A plan review's outcome, the plan's version history (R49). */
export const PLAN_REVIEW_EVENT = 'plan/review'
/** A turn opens: the latest of turn/start and turn/end tells whether a turn is open (R5). */
export const TURN_START_EVENT = 'turn/start'
/** A turn ends (R5). */
export const TURN_END_EVENT = 'turn/end'
/** Logged by the host per request: the model was told the mode in force then (R30). */
export const REQUEST_HEADER_EVENT = 'request/header'
/** A host command run, folded by the projection (R58). */
export const COMMAND_RUN_EVENT = 'command/run'
/** A host command run's outcome, folded by the projection (R58). */
export const COMMAND_DONE_EVENT = 'command/done'

/**
 * A tool broke plan mode (R90): the opt-in guard (`/guard`) saw a side-effecting tool called while
 * the state in force was active. Telemetry only: no reader of plan state takes it (R70).
 */
export const PLAN_VIOLATION_EVENT = 'plan/violation'

/**
 * The event types plan mode reads and writes, in one table (SPEC §1): the `type` of each
 * `SessionEvent` a host appends (`turnStart`, `turnEnd`, `requestHeader`, `commandRun`,
 * `commandDone`) or a reader looks for (`mode`, `review`, `violation`). Frozen.
 *
 * @example
 * await session.append(PLAN_LOG_EVENTS.turnStart, {})
 */
export const PLAN_LOG_EVENTS = Object.freeze({
  /** `plan/mode`: the mode's only durable fact, `{ active }` (R1). */
  mode: PLAN_MODE_EVENT,
  /** `plan/review`: a plan review's request or outcome (R49, R79). */
  review: PLAN_REVIEW_EVENT,
  /** `turn/start`: a turn opens (R5). */
  turnStart: TURN_START_EVENT,
  /** `turn/end`: a turn ends (R5). */
  turnEnd: TURN_END_EVENT,
  /** `request/header`: logged per request, the mode the model was told (R30). */
  requestHeader: REQUEST_HEADER_EVENT,
  /** `command/run`: a host command run, folded by the projection (R58). */
  commandRun: COMMAND_RUN_EVENT,
  /** `command/done`: a host command run's outcome (R58). */
  commandDone: COMMAND_DONE_EVENT,
  /** `plan/violation`: the guard saw a tool break plan mode (R90); telemetry only. */
  violation: PLAN_VIOLATION_EVENT,
} as const)

/** What the guard did with a call that broke plan mode (R89). */
export type ViolationAction = 'observed' | 'blocked'

/** Payload of `plan/violation` (R90). */
export interface PlanViolationData {
  /** The tool's name, as the model called it. */
  tool: string
  /** The framework's id of the call. */
  callId: string
  action: ViolationAction
}

/** Payload of `plan/mode`. */
export interface PlanModeData {
  active: boolean
}

/** Every way a review can end (R49). */
export type ReviewOutcome =
  | 'approved'
  | 'left'
  | 'keep-planning'
  | 'dismissed'
  | 'failed'
  | 'aborted'
  | 'superseded'
  | 'reloaded'

/** Payload of `plan/review` (R49): an outcome, or a durable review's request (R79). */
export interface PlanReviewData {
  outcome: ReviewOutcome | 'requested'
  title: string
  plan: string
  feedback?: string
  /** A durable review's id (R79): on its request and on the record that closes it. */
  reviewId?: string
  /** The framework's id of the exit call that opened a durable review, when it has one (R79). */
  callId?: string
  /** The approval is into a fresh context (R101). */
  fresh?: true
  /** Comments anchored to the plan (R100), on a keep-planning record; `feedback` gives them to the model. */
  comments?: { quote: string; text: string }[]
  /** The outcome was given to the model in the exit call's result, not at a step boundary (R81). */
  toldInResult?: boolean
  /** A headless review policy decided the outcome, not the user (R94, R95); a user's record has no `by`. */
  by?: 'policy'
}

/** A durable review the log holds open (R79): what `openReview` returns, and the call it came from. */
export interface OpenPlanReview {
  readonly reviewId: string
  readonly title: string
  readonly plan: string
  /** The seq of its request record. */
  readonly version: number
  readonly callId?: string
}

/** An outcome of a durable review that the model has not been told yet (R81). */
export interface ReviewNews {
  readonly outcome: 'approved' | 'left' | 'keep-planning' | 'superseded'
  readonly feedback?: string
}

/** What the log says of durable reviews (R79–R81): the open one, the last closed one, the untold outcome. */
export interface ReviewFold {
  readonly open: OpenPlanReview | null
  readonly closed: { readonly reviewId: string; readonly outcome: ReviewOutcome } | null
  readonly news: ReviewNews | null
}

/** The review fold of a log that holds no durable review. */
export const EMPTY_REVIEW_FOLD: ReviewFold = Object.freeze({ open: null, closed: null, news: null })

const CLOSING_OUTCOMES: ReadonlySet<unknown> = new Set(['approved', 'left', 'keep-planning', 'dismissed', 'failed', 'aborted', 'superseded', 'reloaded'])

/** Whether a value is one of the outcomes that close a review (R49). */
export function isReviewOutcome(value: unknown): value is ReviewOutcome {
  return CLOSING_OUTCOMES.has(value)
}

/**
 * The news a review's outcome leaves for the next step boundary, or null when it tells nothing
 * (R81): none once the call's result told it; an approval, a leave, a keep-planning (with its
 * feedback) or a superseded review is told. The one reading of news: the fold reads it off a
 * closing record, the chart off the review it closes.
 */
export function reviewNews(outcome: unknown, feedback: unknown, toldInResult: boolean): ReviewNews | null {
  if (toldInResult) return null
  if (outcome === 'keep-planning' && typeof feedback === 'string') return { outcome, feedback }
  return outcome === 'approved' || outcome === 'left' || outcome === 'keep-planning' || outcome === 'superseded' ? { outcome } : null
}

/**
 * The review fold after a `plan/review` (R79, R80): a request opens a review (the latest one
 * wins); the first record of the open review's id closes it; every other record (a channel
 * review's, a lost racing answer's) changes nothing. Returns `fold` itself when nothing changes.
 */
function foldReviewRecord(fold: ReviewFold, data: Record<string, unknown> | undefined, seq: number): ReviewFold {
  if (data === undefined || typeof data.reviewId !== 'string') return fold
  const { reviewId, outcome } = data
  if (outcome === 'requested') {
    if (typeof data.plan !== 'string' || typeof data.title !== 'string') return fold
    const open: OpenPlanReview =
      typeof data.callId === 'string'
        ? { reviewId, title: data.title, plan: data.plan, version: seq, callId: data.callId }
        : { reviewId, title: data.title, plan: data.plan, version: seq }
    // A new request: an older review's answer is no longer told apart from an unknown one (R80).
    return { open, closed: null, news: null }
  }
  if (fold.open?.reviewId !== reviewId || !CLOSING_OUTCOMES.has(outcome)) return fold
  return { open: null, closed: { reviewId, outcome: outcome as ReviewOutcome }, news: reviewNews(outcome, data.feedback, data.toldInResult === true) }
}

/**
 * Whether a `plan/review` record presents a plan (R96): a channel review's record (one per plan
 * the model presented, whatever its outcome) or a durable review's request. A durable review's
 * closing record presents nothing new: its plan was presented by its request.
 */
export function presentsPlan(data: Record<string, unknown> | undefined): boolean {
  if (data === undefined || typeof data.plan !== 'string') return false
  return typeof data.reviewId === 'string' ? data.outcome === 'requested' : CLOSING_OUTCOMES.has(data.outcome)
}

/**
 * Whether a review outcome leaves plan mode (R47, R101): an approval, or the user's choice to
 * leave without carrying the plan out. Both keep a selection of inactive (R58, R64) and, told in
 * the call's result, tell the model it left (R31).
 */
export function leavesPlanMode(outcome: unknown): outcome is 'approved' | 'left' {
  return outcome === 'approved' || outcome === 'left'
}

/** A durable review's request record: what a log listener makes of it (R79). */
function isReviewRequest(data: Record<string, unknown> | undefined): boolean {
  return data?.outcome === 'requested' && typeof data.reviewId === 'string'
}

/** A projection state (R58): `openReview` only while a durable review is open. */
function projectionOf(active: boolean, runs: Readonly<Record<string, boolean>>, kept: boolean | null, openReview: string | undefined): PlanProjectionState {
  return openReview === undefined ? { active, runs, kept } : { active, runs, kept, openReview }
}

/**
 * A `plan/review` through the projection (R58, R80): an approval or a leave keeps a selection of
 * inactive, unless it is a durable review's record that does not close the review the log holds
 * open (a late or lost answer's); a durable request opens its review, as the review fold reads it.
 */
function projectReviewRecord(state: PlanProjectionState, data: Record<string, unknown> | undefined): PlanProjectionState {
  if (typeof data?.reviewId !== 'string') return leavesPlanMode(data?.outcome) ? projectionOf(state.active, state.runs, false, state.openReview) : state
  const { reviewId, outcome } = data
  if (outcome === 'requested') {
    if (typeof data.plan !== 'string' || typeof data.title !== 'string' || state.openReview === reviewId) return state
    return projectionOf(state.active, state.runs, state.kept, reviewId)
  }
  if (state.openReview !== reviewId || !CLOSING_OUTCOMES.has(outcome)) return state
  return projectionOf(state.active, state.runs, leavesPlanMode(outcome) ? false : state.kept, undefined)
}

/**
 * A durable approval that closes no open review: a lost racing answer's record, or one of an id
 * never requested (R79, R80). It changes nothing, as it changes nothing live: no kept selection
 * (R58, R64) and no K (R31). Only approvals need the check: no other record projects or tells.
 */
function isStrayApproval(review: ReviewFold, data: Record<string, unknown> | undefined): boolean {
  return leavesPlanMode(data?.outcome) && typeof data!.reviewId === 'string' && review.open?.reviewId !== data!.reviewId
}

/**
 * Whether the durable approval at `events[index]` closes no open review (see `isStrayApproval`),
 * read backwards: the last valid request before it must carry its id, with no closing record of
 * that id in between.
 */
function isStrayApprovalAt(events: readonly SessionEvent[], index: number, before: ReviewFold | undefined = undefined, from = 0): boolean {
  const data = payload(events[index]!)
  if (!leavesPlanMode(data?.outcome) || typeof data!.reviewId !== 'string') return false
  for (let i = index - 1; i >= from; i--) {
    const event = events[i]!
    if (event.type !== PLAN_REVIEW_EVENT) continue
    const earlier = payload(event)
    if (typeof earlier?.reviewId !== 'string') continue
    if (earlier.outcome === 'requested') {
      if (typeof earlier.plan !== 'string' || typeof earlier.title !== 'string') continue // opens nothing
      return earlier.reviewId !== data.reviewId
    }
    if (earlier.reviewId === data.reviewId && CLOSING_OUTCOMES.has(earlier.outcome)) return true
  }
  // The events start after a checkpoint: its fold knows the review open there (R76).
  return before?.open?.reviewId !== data.reviewId
}

/** The projection's state: a pure fold of the log for UIs (R58). JSON data only. */
export interface PlanProjectionState {
  /** F: the last `plan/mode`. */
  readonly active: boolean
  /** Unsettled `/plan` runs, by commandId, with the mode each one selects. */
  readonly runs: Readonly<Record<string, boolean>>
  /** The latest successful selection (or approved exit) not yet followed by a `plan/mode`. */
  readonly kept: boolean | null
  /**
   * The id of the durable review the log holds open (R79); absent while none is. Only its first
   * closing record keeps an approval's or a leave's selection: another review's (a late or lost
   * answer's, R80) changes nothing, as it changes nothing for attach (R64).
   */
  readonly openReview?: string
}

/** Everything the log can tell plan mode (R64): what attach rebuilds and what UIs show. */
export interface PlanLogFold {
  /** The projection's state: F (`active`) and the kept selection (R58). */
  readonly projection: PlanProjectionState
  /** The latest of turn/start, turn/end is a turn/start (R5). */
  readonly openTurn: boolean
  /** K, what the model was last told (R31): null when never told. */
  readonly told: boolean | null
  /** Durable reviews: the open one, the last closed one, the outcome not told yet (R79–R81). */
  readonly review: ReviewFold
  /** The plan approved last, while plan mode was not entered again (R98). */
  readonly approved: ApprovedPlan | null
  /** The last plan presented in the current planning episode and its version (R96), or null. */
  readonly episode: PlanEpisode | null
  /**
   * The seq of the last event replayed (`replayPlanLog`: the log's last event, from which attach
   * follows the log), or of the last event `foldPlanLogEvent` read; -Infinity before any.
   */
  readonly lastSeq: number
}

/**
 * The plan the user approved last (R98): the latest `plan/review { outcome: 'approved' }`, until
 * a `plan/mode { active: true }` after it (plan mode entered again) voids it.
 */
export interface ApprovedPlan {
  readonly title: string
  readonly plan: string
  /** The seq of the approving record. */
  readonly seq: number
  /** Set when a headless policy approved it (R94, R95). */
  readonly by?: 'policy'
  /** Set when the user approved it into a fresh context (R101): the host hands it off. */
  readonly fresh?: true
}

/** The last plan presented in the current planning episode, and its version (R96). */
export interface PlanEpisode {
  readonly version: number
  readonly plan: string
  /**
   * The keep-planning feedback given on the episode's versions so far, by version (R102: a
   * handoff's decisions); absent when there is none. A checkpoint carries it, so that a handoff
   * read from the events after it still tells the decisions made before it.
   */
  readonly decisions?: readonly PlanDecision[]
  /**
   * The episode's durable presentations whose review no record has closed yet (R96: their first
   * closing record settles them, and its feedback is a decision); absent when there is none.
   */
  readonly open?: readonly OpenPresentation[]
  /**
   * Set on the episode a checkpoint's readers begin in (`episodeBefore`, R76): the seq of the
   * event the checkpoint ends at. The events up to it are in the episode already, so readers
   * that begin in it skip them.
   */
  readonly after?: number
}

/** A durable review's request of the current episode that no record has closed yet (R96). */
export interface OpenPresentation {
  readonly reviewId: string
  /** The version its plan got. */
  readonly version: number
}

/** The feedback the user gave on one version of a plan (R100, R102). */
export interface PlanDecision {
  readonly version: number
  readonly feedback: string
}

/** How a timeline shows a log event: a tone (its family), a short label and a detail line. */
export interface PlanLogLine {
  tone: 'mode' | 'review' | 'turn' | 'command' | 'violation' | 'log'
  label: string
  detail: string
}

/**
 * What a log event appended after attach tells the chart (R70): the chart's `LOG.*` events. The
 * log defines them and the chart accepts them, so the log's meaning needs nothing of the chart.
 */
export type PlanLogObservation =
  | { type: 'LOG.PLAN_MODE'; active: boolean }
  | { type: 'LOG.TURN_START' }
  | { type: 'LOG.TURN_END' }
  | { type: 'LOG.REQUEST_HEADER' }
  /** A host's logged `/plan` run (R58), heard live: its selection counts once its `command/done` says success (R86). */
  | { type: 'LOG.COMMAND_RUN'; commandId: string; active: boolean }
  | { type: 'LOG.COMMAND_DONE'; commandId: string; success: boolean }
  /** A durable review's request (R79), the chart's own or another process's. */
  | { type: 'LOG.REVIEW_REQUESTED'; review: OpenPlanReview }
  /** A record closing a durable review (R80), the chart's own or another process's. */
  | { type: 'LOG.REVIEW_CLOSED'; reviewId: string; outcome: ReviewOutcome; feedback?: string; toldInResult: boolean; by?: 'policy'; fresh?: true }

/** One kind of log event and how each reader takes it. */
export interface PlanLogKind {
  /** What the event means, with the rules that read it. */
  readonly meaning: string
  /**
   * Its effect on the projection (R58); returns `state` itself when it changes nothing, so
   * irrelevant events cost no allocation. Absent: the projection ignores the kind.
   */
  readonly project?: (state: PlanProjectionState, data: Record<string, unknown> | undefined) => PlanProjectionState
  /** The turn it leaves open (`true`) or closed (`false`), R5. Absent: turns are unchanged. */
  readonly opensTurn?: boolean
  /**
   * What the model has been told once this event is logged, given F just before it (R30, R31),
   * or `undefined` when it tells nothing.
   */
  readonly tells?: (data: Record<string, unknown> | undefined, active: boolean) => boolean | undefined
  /**
   * The chart's event when this kind is appended after attach. Absent: the chart made that
   * decision itself (reviews, commands) or it cannot matter, and the event is dropped before it
   * reaches the actor (R70).
   * @throws on a payload the chart must not believe (R61).
   */
  readonly observe?: (data: Record<string, unknown> | undefined, seq: number) => PlanLogObservation | undefined
  /**
   * Its effect on the durable reviews' fold (R79–R81); returns `fold` itself when it changes
   * nothing. Absent: reviews are unchanged.
   */
  readonly review?: (fold: ReviewFold, data: Record<string, unknown> | undefined, seq: number) => ReviewFold
  /**
   * The plan approved last once this event is logged (R98); absent: unchanged. A lost racing
   * answer's approval (R80) never reaches it: the fold skips such a record.
   */
  readonly approves?: (approved: ApprovedPlan | null, data: Record<string, unknown> | undefined, seq: number) => ApprovedPlan | null
  /** The planning episode once this event is logged (R96, R102); absent: unchanged. */
  readonly episode?: (episode: PlanEpisode | null, data: Record<string, unknown> | undefined) => PlanEpisode | null
  /**
   * The violation it records (R90, R92), checked: a payload that is not what the guard writes
   * is none (logs are untrusted input). Absent: the kind records none.
   */
  readonly violation?: (data: Record<string, unknown> | undefined) => PlanViolationData | undefined
  /** The event as a timeline line (`plan-mode inspect`, the visualizer): `detail` sums up its payload. */
  readonly describe: (data: Record<string, unknown>) => PlanLogLine
}

const text = (value: unknown): string | undefined => (typeof value === 'string' ? value : undefined)

/** How a review record's outcome is qualified where it is shown: ` (fresh context)` (R101), ` (by policy)` (R94). */
function qualifier(data: Record<string, unknown>): string {
  return `${data.fresh === true ? ' (fresh context)' : ''}${data.by === 'policy' ? ' (by policy)' : ''}`
}

/** A value as R61 quotes it: its JSON, or its string form where JSON has none (a BigInt, a symbol). */
function describeValue(value: unknown): string {
  try {
    return JSON.stringify(value) ?? String(value)
  } catch {
    return typeof value === 'bigint' ? `${value}n` : String(value)
  }
}

/**
 * `active` of a `plan/mode` payload (R1).
 * @throws Error `plan/mode carries invalid active state <JSON>; expected a boolean` (R61)
 */
function readPlanModeData(data: unknown): boolean {
  const active = (data as { active?: unknown } | null | undefined)?.active
  if (typeof active !== 'boolean') throw new Error(`plan/mode carries invalid active state ${describeValue(active)}; expected a boolean`)
  return active
}

/** The mode a `/plan` run selects: `off` in any case leaves, anything else enters (R54). */
export function selectsPlanMode(args: string): boolean {
  return args.trim().toLowerCase() !== 'off'
}

/**
 * A kind with every field present, in one order: the replay reads them at one call site, which
 * stays fast only while every kind has the same shape.
 */
function kind(spec: PlanLogKind): PlanLogKind {
  return {
    meaning: spec.meaning,
    project: spec.project,
    opensTurn: spec.opensTurn,
    tells: spec.tells,
    observe: spec.observe,
    review: spec.review,
    approves: spec.approves,
    episode: spec.episode,
    violation: spec.violation,
    describe: spec.describe,
  }
}

/** The event kinds plan mode reads, by type. Every other type means nothing to it. */
export const PLAN_LOG_KINDS: Readonly<Record<string, PlanLogKind>> = {
  [PLAN_MODE_EVENT]: kind({
    meaning: 'The logged mode F: the last one wins (R1–R3); it clears every kept selection (R58).',
    project(state, data) {
      const active = data?.active
      // An invalid plan/mode is a corrupt log; the view ignores it (attach reports it, R61).
      if (typeof active !== 'boolean') return state
      if (state.active === active && state.kept === null) return state
      return projectionOf(active, state.runs, null, state.openReview)
    },
    observe: (data) => ({ type: 'LOG.PLAN_MODE', active: readPlanModeData(data) }),
    // Entering plan mode again voids the approved plan (R98); every plan/mode starts an episode (R96).
    approves: (approved, data) => (data?.active === true ? null : approved),
    episode: () => null,
    describe: (data) => ({
      tone: 'mode',
      label: `plan/mode ${data.active === true ? 'on' : data.active === false ? 'off' : '?'}`,
      detail: `active: ${String(data.active)}`,
    }),
  }),
  [PLAN_REVIEW_EVENT]: kind({
    meaning:
      'A review outcome (R49), or a durable review requested (R79); an approval told in its call\'s result told the model it left plan mode (R31, R81) and keeps a selection of inactive (R58, R64).',
    project: projectReviewRecord,
    // A durable approval not given in the call's result is told at the next boundary (R81).
    tells: (data) => (leavesPlanMode(data?.outcome) && (typeof data!.reviewId !== 'string' || data!.toldInResult === true) ? false : undefined),
    review: foldReviewRecord,
    approves: approvedByRecord,
    episode: episodeByRecord,
    // Durable reviews' records reach the chart: another process may have opened or answered one (R79, R80).
    observe: (data, seq) => {
      if (typeof data?.reviewId !== 'string') return undefined
      if (isReviewRequest(data)) {
        const open = foldReviewRecord(EMPTY_REVIEW_FOLD, data, seq).open
        return open === null ? undefined : { type: 'LOG.REVIEW_REQUESTED', review: open }
      }
      if (!CLOSING_OUTCOMES.has(data.outcome)) return undefined
      return {
        type: 'LOG.REVIEW_CLOSED',
        reviewId: data.reviewId,
        outcome: data.outcome as ReviewOutcome,
        ...(typeof data.feedback === 'string' ? { feedback: data.feedback } : {}),
        toldInResult: data.toldInResult === true,
        ...(data.by === 'policy' ? { by: 'policy' as const } : {}),
        // Part of the outcome: a fresh approval is not the plain one another writer recorded (R80, R101).
        ...(data.fresh === true ? { fresh: true as const } : {}),
      }
    },
    // A headless policy's decision shows as such: `approved (by policy)` (R94, R95).
    describe: (data) => ({
      tone: 'review',
      label: `plan/review ${text(data.outcome) ?? '?'}${qualifier(data)}`,
      detail: `${String(data.outcome)}${qualifier(data)} "${String(data.title)}"${typeof data.feedback === 'string' ? ` — ${data.feedback}` : ''}`,
    }),
  }),
  [TURN_START_EVENT]: kind({
    meaning: 'A turn opens: selections queue until the next step boundary (R5, R9).',
    opensTurn: true,
    observe: () => ({ type: 'LOG.TURN_START' }),
    describe: () => ({ tone: 'turn', label: TURN_START_EVENT, detail: '' }),
  }),
  [TURN_END_EVENT]: kind({
    meaning: 'The turn ends: selections commit at once (R5, R10).',
    opensTurn: false,
    observe: () => ({ type: 'LOG.TURN_END' }),
    describe: () => ({ tone: 'turn', label: TURN_END_EVENT, detail: '' }),
  }),
  [REQUEST_HEADER_EVENT]: kind({
    meaning: 'A request was derived under the logged mode: the model was told F (R30, R31), and what a review left to tell (R81).',
    tells: (_, active) => active,
    // At attach, a request after a durable review's record means a boundary told its outcome (R81).
    review: (fold) => (fold.news === null ? fold : { open: fold.open, closed: fold.closed, news: null }),
    observe: () => ({ type: 'LOG.REQUEST_HEADER' }),
    describe: (data) => ({ tone: 'log', label: REQUEST_HEADER_EVENT, detail: data.step === undefined ? '' : `step ${String(data.step)}` }),
  }),
  [COMMAND_RUN_EVENT]: kind({
    meaning: 'A `/plan` run starts a candidate selection (R58).',
    project(state, data) {
      if (data?.name !== 'plan' || typeof data.args !== 'string') return state
      return projectionOf(state.active, { ...state.runs, [String(data.commandId)]: selectsPlanMode(data.args) }, state.kept, state.openReview)
    },
    // Live, a run is noted so that its success can be taken as a selection (R86).
    observe: (data) =>
      data?.name === 'plan' && typeof data.args === 'string'
        ? { type: 'LOG.COMMAND_RUN', commandId: String(data.commandId), active: selectsPlanMode(data.args) }
        : undefined,
    describe: (data) => {
      const command = `/${String(data.name)}${data.args ? ` ${String(data.args)}` : ''}`
      return { tone: 'command', label: command, detail: command }
    },
  }),
  [COMMAND_DONE_EVENT]: kind({
    meaning: "A run settles: only a success keeps its selection; the latest settled success wins (R58).",
    project(state, data) {
      const id = String(data?.commandId)
      if (!Object.hasOwn(state.runs, id)) return state
      const { [id]: selected, ...runs } = state.runs
      return projectionOf(state.active, runs, data?.kind === 'success' ? selected! : state.kept, state.openReview)
    },
    observe: (data) => ({ type: 'LOG.COMMAND_DONE', commandId: String(data?.commandId), success: data?.kind === 'success' }),
    describe: (data) => ({
      tone: 'command',
      label: `command/done ${text(data.kind) ?? ''}`,
      detail: `${String(data.kind)}: ${String(data.text ?? '')}`,
    }),
  }),
  [PLAN_VIOLATION_EVENT]: kind({
    meaning: 'A side-effecting tool was called while plan mode was in force, observed or blocked by the opt-in guard (R89, R90); telemetry only.',
    violation(data) {
      const { tool, callId, action } = data ?? {}
      if (typeof tool !== 'string' || typeof callId !== 'string' || (action !== 'observed' && action !== 'blocked')) return undefined
      return { tool, callId, action }
    },
    describe: (data) => ({
      tone: 'violation',
      label: `plan/violation ${text(data.action) ?? '?'}`,
      detail: `${String(data.action)} ${String(data.tool)}${typeof data.callId === 'string' ? ` (call ${data.callId})` : ''}`,
    }),
  }),
}

const PLAN_MODE_KIND = PLAN_LOG_KINDS[PLAN_MODE_EVENT]!
const PLAN_VIOLATION_KIND = PLAN_LOG_KINDS[PLAN_VIOLATION_EVENT]!
const PLAN_REVIEW_KIND = PLAN_LOG_KINDS[PLAN_REVIEW_EVENT]!
const TURN_START_KIND = PLAN_LOG_KINDS[TURN_START_EVENT]!
const TURN_END_KIND = PLAN_LOG_KINDS[TURN_END_EVENT]!
const REQUEST_HEADER_KIND = PLAN_LOG_KINDS[REQUEST_HEADER_EVENT]!
const COMMAND_RUN_KIND = PLAN_LOG_KINDS[COMMAND_RUN_EVENT]!
const COMMAND_DONE_KIND = PLAN_LOG_KINDS[COMMAND_DONE_EVENT]!

/**
 * The kind of a log event type, or undefined for one plan mode does not read, for the loops that
 * read whole logs (R71): a switch over literal labels is several times faster than a keyed lookup
 * per event (most events are not plan mode's), and a switch over imported constants is measurably
 * slower in the built bundle. A test checks it finds every kind of the table.
 */
function kindOf(type: string): PlanLogKind | undefined {
  switch (type) {
    case 'plan/mode':
      return PLAN_MODE_KIND
    case 'plan/review':
      return PLAN_REVIEW_KIND
    case 'turn/start':
      return TURN_START_KIND
    case 'turn/end':
      return TURN_END_KIND
    case 'request/header':
      return REQUEST_HEADER_KIND
    case 'command/run':
      return COMMAND_RUN_KIND
    case 'command/done':
      return COMMAND_DONE_KIND
    case 'plan/violation':
      return PLAN_VIOLATION_KIND
    default:
      return undefined
  }
}

/**
 * Whether a turn is open at the end of `events` (R5): the latest event of a kind that opens or
 * closes a turn decides, as the fold's `openTurn` does, read from the end. For the adapters that
 * log their framework's turns, at every step. It reads the events held: a session loaded from a
 * checkpoint (R76) begins with that checkpoint's `turn/end`, where checkpoints are made.
 */
export function isTurnOpen(events: readonly SessionEvent[]): boolean {
  for (let i = events.length - 1; i >= 0; i--) {
    const opensTurn = kindOf(events[i]!.type)?.opensTurn
    if (opensTurn !== undefined) return opensTurn
  }
  return false
}

/** The kind of a log event type, or undefined for a type plan mode does not read. */
function planLogKind(type: string): PlanLogKind | undefined {
  return Object.hasOwn(PLAN_LOG_KINDS, type) ? PLAN_LOG_KINDS[type] : undefined
}

/** The plan-mode violation an event records (R90, R92), as the table reads it, or undefined. */
export function violationOf(event: SessionEvent): PlanViolationData | undefined {
  return kindOf(event.type)?.violation?.(payload(event))
}

function payload(event: SessionEvent): Record<string, unknown> | undefined {
  const { data } = event
  return typeof data === 'object' && data !== null ? (data as Record<string, unknown>) : undefined
}

/** The projection's state before any event. */
export const EMPTY_PROJECTION: PlanProjectionState = Object.freeze({ active: false, runs: Object.freeze({}), kept: null })

/** The fold of an empty log: a new agent starts inactive, idle, untold (R4). */
export const EMPTY_PLAN_LOG_FOLD: PlanLogFold = Object.freeze({
  projection: EMPTY_PROJECTION,
  openTurn: false,
  told: null,
  review: EMPTY_REVIEW_FOLD,
  approved: null,
  episode: null,
  lastSeq: -Infinity,
})

/** One event through the projection (R58): `state` itself for events it ignores. */
export function projectPlanLogEvent(state: PlanProjectionState, event: SessionEvent): PlanProjectionState {
  const project = planLogKind(event.type)?.project
  return project === undefined ? state : project(state, payload(event))
}

/**
 * The one reader of the log (emmett's `evolve`; `EMPTY_PLAN_LOG_FOLD` is its initial state, and
 * the chart is the side that decides): the fold after one more event, each kind read as the
 * table says. Replay (`replayPlanLog`), restore from a checkpoint and its tail
 * (`replayFromCheckpoint`), the checkpoint itself, the approved plan, the episode a handoff and
 * the history read, and the incremental readers (`plan-mode inspect`, the visualizer) are this
 * fold started from different places. Returns `fold` itself for events that cannot matter.
 * @throws on an invalid `plan/mode` (R61).
 */
export function evolvePlanLog(fold: PlanLogFold, event: SessionEvent): PlanLogFold {
  const kind = kindOf(event.type)
  if (kind === undefined) return fold
  const data = payload(event)
  if (kind === PLAN_MODE_KIND) readPlanModeData(data)
  // The history settles a presentation with any first closing record, a lost answer's too (R96).
  const episode = kind.episode === undefined ? fold.episode : kind.episode(fold.episode, data)
  if (kind === PLAN_REVIEW_KIND && isStrayApproval(fold.review, data)) return { ...fold, episode, lastSeq: event.seq } // R80
  const told = kind.tells?.(data, fold.projection.active)
  return {
    projection: kind.project === undefined ? fold.projection : kind.project(fold.projection, data),
    openTurn: kind.opensTurn ?? fold.openTurn,
    told: told === undefined ? fold.told : told,
    review: kind.review === undefined ? fold.review : kind.review(fold.review, data, event.seq),
    approved: kind.approves === undefined ? fold.approved : kind.approves(fold.approved, data, event.seq),
    episode,
    lastSeq: event.seq,
  }
}

/**
 * Folds one event into `fold`: `evolvePlanLog` under the name `plan-mode inspect` and the
 * visualizer import. Returns `fold` itself for events that cannot matter.
 * @throws on an invalid `plan/mode` (R61).
 */
export const foldPlanLogEvent: (fold: PlanLogFold, event: SessionEvent) => PlanLogFold = evolvePlanLog

/**
 * Replays a whole log (R64): `evolvePlanLog` from the empty fold; `lastSeq` is the log's last
 * event, from which a reader follows the log.
 * @throws on an invalid `plan/mode` (R61): the agent cannot attach until the log is repaired.
 */
export function replayPlanLog(events: readonly SessionEvent[]): PlanLogFold {
  return replayPlanLogFrom(events, EMPTY_PLAN_LOG_FOLD, 0)
}

/**
 * `replayPlanLog` from a checkpoint's fold (R76): `base` is the fold of the events before
 * `events[from]`, and the replay reads `events[from]` on, event by event through `evolvePlanLog`.
 */
export function replayPlanLogFrom(events: readonly SessionEvent[], base: PlanLogFold, from: number): PlanLogFold {
  let fold = base
  for (let i = from; i < events.length; i++) fold = evolvePlanLog(fold, events[i]!)
  const last = events.length > from ? events[events.length - 1]!.seq : base.lastSeq
  return fold.lastSeq === last ? fold : { ...fold, lastSeq: last }
}

/** What attach rebuilds from a log (R64): F, the kept selection, the open turn and K. */
export interface PlanLogRestore {
  readonly active: boolean
  readonly kept: boolean | null
  readonly openTurn: boolean
  readonly told: boolean | null
  readonly review: ReviewFold
  readonly lastSeq: number
}

/**
 * What attach needs of a whole log (R64, R71), read from the end. The open turn, K and the
 * kept selection are decided by the last events of their kinds and by the events after the last
 * `plan/mode`; a backward pass finds them within the log's last few events, then only checks
 * the remaining `plan/mode` events (R61), which costs what a `foldPlanMode` loop costs. It reads
 * the log as `replayPlanLog` does (a property test compares them), each kind as the table says.
 * @throws on an invalid `plan/mode` anywhere in the log (R61).
 */
export function restorePlanLog(events: readonly SessionEvent[]): PlanLogRestore {
  try {
    return restoreBackward(events)
  } catch (error) {
    foldPlanMode(events) // reports the FIRST invalid plan/mode, as every forward reading does (R61)
    throw error
  }
}

function restoreBackward(events: readonly SessionEvent[]): PlanLogRestore {
  let openTurn: boolean | undefined
  /** K once read; `'pending'`: a request header told F as it stood, the plan/mode before it decides. */
  let told: boolean | null | undefined | 'pending'
  /** F: the last plan/mode, once the scan has passed it. */
  let active: boolean | undefined
  /** The projection's events after the last plan/mode, newest first. */
  const tail: SessionEvent[] = []
  /** The commands the tail settles: the latest run or done of each before the tail decides if it is open. */
  const settled = new Map<string, SessionEvent | null>()
  let unresolved = 0
  /** The index of the last durable review request: the review fold is read forward from it. */
  let lastRequest = -1
  let i = events.length - 1
  const decided = () => openTurn !== undefined && told !== undefined && told !== 'pending' && active !== undefined && unresolved === 0
  for (; i >= 0 && !decided(); i--) {
    const event = events[i]!
    const kind = kindOf(event.type)
    if (kind === undefined) continue
    if (kind === PLAN_REVIEW_KIND && isStrayApprovalAt(events, i)) continue // R80: a lost answer changes nothing
    if (lastRequest < 0 && kind === PLAN_REVIEW_KIND && isReviewRequest(payload(event))) lastRequest = i
    if (openTurn === undefined && kind.opensTurn !== undefined) openTurn = kind.opensTurn
    if (told === undefined && kind.tells !== undefined) {
      // A header tells F as it stood just before it: known once the scan passes a plan/mode.
      told = kind === REQUEST_HEADER_KIND ? 'pending' : kind.tells(payload(event), false)
    }
    if (kind === PLAN_MODE_KIND) {
      const value = readPlanModeData(event.data)
      if (told === 'pending') told = value
      if (active === undefined) {
        active = value
        for (const done of tail) {
          if (done.type !== COMMAND_DONE_EVENT) continue
          const id = String(payload(done)?.commandId)
          if (!settled.has(id)) {
            settled.set(id, null)
            unresolved++
          }
        }
      }
    } else if (active === undefined) {
      if (kind.project !== undefined) tail.push(event)
    } else if (unresolved > 0 && (kind === COMMAND_RUN_KIND || kind === COMMAND_DONE_KIND)) {
      const data = payload(event)
      const id = String(data?.commandId)
      if (settled.get(id) !== null) continue // not settled in the tail, or already found
      // A run the projection ignores (not /plan) leaves an earlier one open; a done closes it.
      if (kind === COMMAND_RUN_KIND && kind.project!(EMPTY_PROJECTION, data) === EMPTY_PROJECTION) continue
      settled.set(id, event)
      unresolved--
    }
  }
  for (; i >= 0; i--) {
    const event = events[i]!
    if (event.type === PLAN_MODE_EVENT) readPlanModeData(event.data) // R61: every one is checked
    else if (lastRequest < 0 && event.type === PLAN_REVIEW_EVENT && isReviewRequest(payload(event))) lastRequest = i
  }
  // Nothing before the last request can change the open review or the news (R79, R81).
  let review = EMPTY_REVIEW_FOLD
  for (let r = Math.max(lastRequest, 0); lastRequest >= 0 && r < events.length; r++) {
    const event = events[r]!
    const fold = kindOf(event.type)?.review
    if (fold !== undefined) review = fold(review, payload(event), event.seq)
  }
  let projection: PlanProjectionState = { active: active ?? false, runs: {}, kept: null }
  for (const event of settled.values()) {
    if (event?.type === COMMAND_RUN_EVENT) projection = COMMAND_RUN_KIND.project!(projection, payload(event))
  }
  for (let t = tail.length - 1; t >= 0; t--) {
    const event = tail[t]!
    const data = payload(event)
    // The scan skipped the records that close no open review (R80): every approval or leave left keeps.
    if (event.type === PLAN_REVIEW_EVENT) projection = leavesPlanMode(data?.outcome) ? { ...projection, kept: false } : projection
    else projection = PLAN_LOG_KINDS[event.type]!.project!(projection, data)
  }
  const last = events[events.length - 1]
  return {
    active: projection.active,
    kept: projection.kept,
    openTurn: openTurn ?? false,
    // A header with no plan/mode before it told inactive (R2).
    told: told === 'pending' ? false : (told ?? null),
    review,
    lastSeq: last === undefined ? -Infinity : last.seq,
  }
}

/**
 * The approved plan after a `plan/review` (R98): an approval record replaces it (a lost racing
 * answer's record carries the same plan).
 */
function approvedByRecord(approved: ApprovedPlan | null, data: Record<string, unknown> | undefined, seq: number): ApprovedPlan | null {
  if (data?.outcome !== 'approved' || typeof data.plan !== 'string') return approved
  const title = typeof data.title === 'string' ? data.title : ''
  return { title, plan: data.plan, seq, ...(data.by === 'policy' ? { by: 'policy' as const } : {}), ...(data.fresh === true ? { fresh: true as const } : {}) }
}

/**
 * The episode after a `plan/review` (R96): a presented plan is its next version, and
 * keep-planning feedback on one of its versions is a decision (R102). A channel review's record
 * presents and settles at once; a durable review's request presents, and the first closing
 * record of its id settles it, as `planHistory` reads them.
 */
function episodeByRecord(episode: PlanEpisode | null, data: Record<string, unknown> | undefined): PlanEpisode | null {
  if (data === undefined) return episode
  const reviewId = typeof data.reviewId === 'string' ? data.reviewId : undefined
  if (presentsPlan(data)) {
    const version = (episode?.version ?? 0) + 1
    const open = (episode?.open ?? []).filter((entry) => entry.reviewId !== reviewId)
    if (reviewId !== undefined) open.push({ reviewId, version })
    const decisions = reviewId === undefined ? withDecision(episode?.decisions, version, data.feedback) : episode?.decisions
    return episodeOf(version, data.plan as string, decisions, open)
  }
  const settled = reviewId === undefined || typeof data.outcome !== 'string' ? undefined : episode?.open?.find((entry) => entry.reviewId === reviewId)
  if (settled === undefined) return episode
  const open = episode!.open!.filter((entry) => entry !== settled)
  return episodeOf(episode!.version, episode!.plan, withDecision(episode!.decisions, settled.version, data.feedback), open)
}

/**
 * The episode after one event of type `type` (R96), as the table reads it: a `plan/mode` starts
 * a new one, a `plan/review` presents or settles a version, any other event leaves it.
 */
export function episodeAfter(episode: PlanEpisode | null, type: string, data: Record<string, unknown> | undefined): PlanEpisode | null {
  const next = kindOf(type)?.episode
  return next === undefined ? episode : next(episode, data)
}

/** `decisions` with the feedback on `version`, in version order (unchanged when there is no feedback). */
function withDecision(decisions: readonly PlanDecision[] | undefined, version: number, feedback: unknown): readonly PlanDecision[] | undefined {
  if (typeof feedback !== 'string') return decisions
  return [...(decisions ?? []), { version, feedback }].sort((a, b) => a.version - b.version)
}

/** An episode with its optional lists present only when they hold something. */
function episodeOf(version: number, plan: string, decisions: readonly PlanDecision[] | undefined, open: readonly OpenPresentation[]): PlanEpisode {
  return { version, plan, ...(decisions === undefined || decisions.length === 0 ? {} : { decisions }), ...(open.length === 0 ? {} : { open }) }
}

/**
 * Whether a `request/header` follows the event `seq` in `events`, read from the end (R102: a
 * handoff is due until a request follows its approval).
 */
export function requestFollows(events: readonly SessionEvent[], seq: number): boolean {
  for (let i = events.length - 1; i >= 0 && events[i]!.seq > seq; i--) {
    if (events[i]!.type === REQUEST_HEADER_EVENT) return true
  }
  return false
}

/**
 * The approved plan as `events[from…]` tells it (R98), read backwards to the last approval or
 * entry into plan mode (a lost answer's approval, R80, is no approval); `undefined` when they hold
 * neither (the plan then is what the fold before them says: a checkpoint's, or none). `before` is
 * the durable reviews' fold before `events[from]`, when they start after a checkpoint.
 */
export function latestApprovedPlan(events: readonly SessionEvent[], before?: ReviewFold, from = 0): ApprovedPlan | null | undefined {
  for (let i = events.length - 1; i >= from; i--) {
    const event = events[i]!
    if (event.type !== PLAN_MODE_EVENT && event.type !== PLAN_REVIEW_EVENT) continue
    const data = payload(event)
    const decides = event.type === PLAN_MODE_EVENT ? data?.active === true : data?.outcome === 'approved' && typeof data.plan === 'string'
    if (decides && !isStrayApprovalAt(events, i, before, from)) return kindOf(event.type)!.approves!(null, data, event.seq)
  }
  return undefined
}

/**
 * The chart's event for a log event appended after attach, or undefined for the events that
 * cannot matter to it (R70: dropped before they reach the actor).
 * @throws on an invalid `plan/mode` (R61).
 */
export function observePlanLogEvent(event: SessionEvent): PlanLogObservation | undefined {
  return planLogKind(event.type)?.observe?.(payload(event), event.seq)
}

/** A log event as one timeline line, or undefined for a kind plan mode does not read. */
export function describePlanLogEvent(event: SessionEvent): PlanLogLine | undefined {
  return planLogKind(event.type)?.describe(payload(event) ?? {})
}

/**
 * Throws when `event` is a `plan/mode` whose `active` is not a boolean (R61); every other
 * event passes.
 * @throws Error `plan/mode carries invalid active state <JSON>; expected a boolean`
 */
export function validatePlanModeEvent(event: SessionEvent): void {
  if (event.type === PLAN_MODE_EVENT) readPlanModeData(event.data)
}

/**
 * The fold F (R2): `active` of the last `plan/mode` in `events[0, end)`, or `false` when there
 * is none; `end` defaults to the whole log.
 * @throws like `validatePlanModeEvent` on any invalid `plan/mode` in that range (R61).
 */
export function foldPlanMode(events: readonly SessionEvent[], end: number = events.length): boolean {
  let active = false
  const stop = Math.min(end, events.length)
  for (let i = 0; i < stop; i++) {
    const event = events[i]!
    if (event.type === PLAN_MODE_EVENT) active = readPlanModeData(event.data)
  }
  return active
}
