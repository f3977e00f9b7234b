/**
 * An executable oracle of SPEC.md: a small, pure model of what plan mode must do, written from
 * the SPEC text alone. It does NOT import the statechart or the service (`src/machines/*`,
 * `src/service.ts`); it reads no library code at all, so that an error in the library cannot
 * hide itself by being copied here.
 *
 * The model, per agent:
 * - the log (what has landed), from which F (R2) and the open turn (R5) are folded on demand;
 * - per attachment (SPEC §1; a detach or reload ends one, the next call starts another, R63, R64):
 *   P (R6), K (R30), the open review (R42–R49) and the operation queue (§1: `set`,
 *   `stepBoundary` and review settlements are serialized);
 * - appends in flight: each append the service makes is decided by an `appendFate` policy:
 *   it lands at once, fails (R11, R19, R49) or is held until the test publishes, resolves or
 *   rejects it (a database log whose subscription and `append` result arrive separately).
 *
 * Every public call returns an `OracleCall` whose `state` says how the real call must have
 * settled by now (`pending`, `resolved` with a value, `rejected` with a message). The test
 * drives the real service and the oracle with the same operations and compares, after each one:
 * `get`, `section`, the log, the calls, the notices, the asks, the steered messages and the
 * warnings.
 *
 * Interpretations the SPEC leaves open, chosen here and named where used:
 * - A review answered while an append is in flight is recorded as soon as that append has landed,
 *   ahead of the operations still waiting for their turn (docs/spec.md §1).
 * - An exit-tool call whose signal is already aborted fails with the abort message before any
 *   other check and records nothing (R46 "also before the question is asked"; no review opened).
 *   One whose signal aborts while it waits for its turn (§1) fails at once the same way, and
 *   asks nothing when its turn comes.
 * - An abort (R46) or a reload (R60, R63) closes the review at once, outside the operation queue
 *   (R46 "the call fails at once"); only its record is an append like any other.
 * - An operation finishes when its own work is done (its append, the record of a review it
 *   closed); the next one starts when no append of the attachment is in flight any more.
 * - A detach (R63) lets the detached attachment finish the work in flight (an operation and its
 *   append, a review's record). Until then it answers reads (it still holds the agent's state);
 *   every operation runs on the attachment current when its turn comes, so those queued behind
 *   the detach run on the next attachment, made from the log once all that work has landed
 *   (R64: everything the log can tell, including the detached one's approvals).
 * - That wait is bounded (R73): when the close timeout expires (the test says when,
 *   `expireCloseTimeouts`), the work still in flight is abandoned: one warning, the operation
 *   waiting for it fails with the same text, an exit call whose review record never landed fails
 *   as reloaded, and the attachment is gone (its P with it: the next one reads the log). An
 *   abandoned held append may still be resolved (it lands: only the log changes) or rejected
 *   (nothing happens).
 * - Such an append may land later, so the agent's next operation waits for it (R73): the first
 *   operation whose turn comes after the abandonment (a review's settlement is not one) waits
 *   until every append the closed attachment abandoned has settled (resolved or rejected; a
 *   publish alone is not a settlement), at most another close timeout (`expireCloseTimeouts` ends
 *   the waits that had begun by then, before it abandons anything), and not past `dispose`; then
 *   it runs as usual, on an attachment made from the log as it is then. The operations behind it
 *   wait for it, as always (§1). Appends that all settle before any operation's turn came leave
 *   nothing to wait for. Reads never wait. A new service (a restart) knows nothing of the old
 *   one's abandoned appends.
 * - An operation called before `dispose` whose turn comes after it does nothing and fails (R60):
 *   an exit call as reloaded, the others with the disposed-before-turn text.
 *
 * Durable reviews (`reviews: 'durable'`, R78–R81). The log holds the open review; each attachment
 * follows it from the records it hears (its `durable` belief), rebuilt from the log at attach:
 * - The review the log holds open is the one of the last `requested` record, unless the first
 *   closing record of its id followed it (R79, R80); records of other ids change nothing.
 * - A closing record heard while this service's own record of the same review is in flight (an
 *   answer, a supersede) is applied once that append settles: the review's records are taken in
 *   the order the log holds them, and the first one is the outcome (R80: a racing answer lost,
 *   unless its record is identical to the first: then it resolves as the first did), as a replay
 *   reads it: a `plan/mode` heard after that record leaves its consent nothing to select (R16,
 *   R58), a request header heard after it told it (R81) and set K (R30).
 *   Every other closing record of the open review is applied when it is heard (R80).
 * - An untold outcome (R81) is dropped by a new request: live, when this service's exit call
 *   makes its request (R81: "the model asked again, so it was told", also when the request's
 *   append then fails) or another writer's request is heard, and by a step boundary that tells
 *   it; at attach it is the log's (R81's rebuild rule: a request/header or a request in the log).
 * - An answer whose record fails rejects with the log's error and warns nothing (R80 says what
 *   the answer's caller gets; R49's containment is for records no caller waits on). A supersede
 *   record that fails is contained (R49): the warning, and the review closes as superseded all the
 *   same (the selection follows, R48); a reload or restart reads the log again.
 * - `openReview` shows the review that waits for its answer: none while this service's own record
 *   of it (an answer, a supersede) is in flight, though the log still holds it open until that
 *   record lands (R79 does not say which; a UI then shows no question to answer twice), and the
 *   review again when an answer's record failed (R80: it stays open). Likewise none while this
 *   service's own request is in flight, even once the log reported it (R62: an append counts as
 *   landed only when it resolves; R79: the call is submitted then) or reported another writer's
 *   request meanwhile (once ours settles, the later of the two requests in the log is open).
 * - The exit call's request id is drawn by the service (`crypto.randomUUID`); the test tells
 *   the oracle which one (`ExecuteInput.reviewId`). Everything else the oracle decides.
 *
 * Headless review policies (R94, R95): who decided an outcome is part of it.
 * - A channel's answer with `by: 'policy'`, or its `ASK_CANCELLED` rejection with `by: 'policy'`,
 *   settles the call exactly as the same answer or dismissal without it (R44–R47), and its record
 *   ends with `by: 'policy'`; any other `by` (or one on another rejection) is not read, and a
 *   record without a policy has no `by` key at all.
 * - `answerReviewByPolicy(agent, policy)` checks the policy, then `dispose`, then takes the review
 *   `openReview` shows when it is called: none resolves `null` at once and changes nothing (R95).
 *   Otherwise it is `answerReview` with the policy's verdict (approved, or dismissed, `by:
 *   'policy'`; `toldInResult` as asked): the same turn, refusals and race, resolving `{ reviewId,
 *   outcome }` once the record landed. A dismissal leaves nothing for a boundary to tell (R81).
 * - Two closing records of one review that differ only in `by` are different outcomes (R95): the
 *   later one lost. Apart from `by`, a policy's approval is a user's (R30, R31, R58, R64).
 *
 * The whole set of decisions (R101), for a service created with `decisions: 'all'`:
 * - The question offers four options (`expectedQuestion`); an answer is read as R44 reads it, one
 *   option alone with nothing else said: `Approve` consents, `Approve in a fresh context` consents
 *   into a fresh context, `Leave plan mode` leaves; anything else keeps planning (R45). Without
 *   `'all'` the two added labels keep planning (`readDecision`).
 * - A fresh approval is an approval for every rule, recorded with `fresh: true`. Its place in the
 *   record: R101 puts it after the feedback and comments, before `toldInResult` and `by`. A fresh and a plain approval of one review are different outcomes (R80: the record
 *   tells them apart by its content, and R102 hands only the fresh one off): the later one lost.
 * - A leave (`left`) applies R47's state change without consent: K inactive when the call's result
 *   tells it (a channel review; a durable one told in the result), P leaving when F is active, else
 *   removed; the exit call fails with `TEXT.left`, `answerReview` resolves `'left'` (the recorded
 *   outcome, as R80 resolves the others). It projects (R58) and tells K (R31) like an approval.
 * - A durable leave not told in the result is told at the next boundary with `TEXT.left`, unless plan
 *   mode is in force again there (R101, as R81 says of an approval). No leaving notice follows it (R101: the leave's flush has "no notice"; R81:
 *   the message says the mode already); R32's entering notice does, when the user entered plan
 *   mode again since and K is inactive.
 */

/** A log entry as plan mode sees it (the log assigns `seq`; the oracle compares type and data). */
export interface LogEntry {
  type: string
  data: unknown
}

/** How the real call must have settled by now. */
export type CallState<T> =
  | { status: 'pending' }
  | { status: 'resolved'; value: T }
  | { status: 'rejected'; message: string }

/** One call made to the service, with its expected settlement. */
export interface OracleCall<T = unknown> {
  readonly id: number
  readonly kind: 'set' | 'boundary' | 'review' | 'command' | 'answer'
  readonly agentId: string | undefined
  state: CallState<T>
}

/** What an exit call resolves with: a channel's approval (R47) or a durable request's submission (R79). */
export type ExitResult = { approved: true } | { submitted: true; reviewId: string }

/** `set`'s results (R8–R10). */
export type SetOutcome = 'committed' | 'queued' | 'cancelled' | 'noop'

/** What a boundary must return: the section and the notices' texts (R18, R32, R33). */
export interface BoundaryExpectation {
  section: string
  notices: string[]
}

/** `/plan`'s result (R55–R57). */
export interface CommandExpectation {
  kind: 'success' | 'error'
  text: string
}

/** A review answer as the channel resolves it (SPEC §1 `ReviewAnswer`, loosely typed on purpose). */
export interface AnswerLike {
  answers?: unknown
  /** R94: `'policy'` when a headless review policy answered; any other value is not read. */
  by?: unknown
}

/** What the fate policy decides for one append the service makes. */
export type AppendFate = { kind: 'ok' } | { kind: 'fail'; error: Error } | { kind: 'hold' }

/** An append the service started that the test holds. */
export interface HeldAppend {
  readonly handle: number
  readonly agentId: string
  readonly type: string
  readonly data: unknown
  published: boolean
  settled: boolean
  /** A close gave up on it (R73): it may still land, and then only the log changes. */
  abandoned: boolean
  /**
   * When it lands, the log may hold a `plan/mode` equal to the one before it (R3 does not hold
   * for it): an abandoned append that nothing waited for any more while it had not landed (R73:
   * the next operation's wait for it gave up, or a new service took over), or one the service
   * started before such an append landed.
   */
  mayRepeat: boolean
}

/** A warning the service must have logged (R19, R49). */
export interface ExpectedWarning {
  message: string
  error: unknown
}

/** A review question the channel must have been asked (R43). */
export interface ExpectedAsk {
  readonly agentId: string
  readonly plan: string
  /** The request's signal must be aborted (R43: abort, supersede, reload). */
  aborted: boolean
  /** The ask belongs to a review that is no longer waiting for it: a later answer is ignored. */
  stale: boolean
}

/** A message `/plan` must have steered into the agent (R56), without its id. */
export interface ExpectedSteer {
  agentId: string
  content: unknown[]
}

/** The mode's user-visible strings, quoted from SPEC. */
export const TEXT = {
  entering: 'The user switched this session to plan mode.',
  leaving: 'The user switched this session back to the default mode.',
  disposed: 'plan-mode service is disposed',
  noAgent: 'exit_plan_mode requires a calling agent (no session to switch)',
  planNotString: 'exit_plan_mode requires a "plan" string argument',
  notInPlanMode: 'exit_plan_mode is only available in plan mode',
  noHeading: 'exit_plan_mode requires a non-empty markdown plan starting with a # heading',
  tooLarge: 'exit_plan_mode plan is too large (over 256 KiB)',
  alreadyOpen: 'a plan review is already open for this agent; wait for its answer',
  owned:
    "human interaction is unavailable while the calling agent is owned by another live agent; include the unresolved question or decision in the child agent's final result",
  noChannel:
    'no user-interaction channel is available to review the plan; ask the user to switch the session mode instead',
  keepPlanning: 'The user chose to keep planning; revise the plan and present it again.',
  keepPlanningFeedback: 'The user chose to keep planning; their feedback: ',
  dismissed:
    'The user dismissed the plan review to speak instead; stay in plan mode, stop here, and wait for their message.',
  superseded: 'The user changed the plan mode directly; the review is closed.',
  reloaded: 'the plan-mode service was reloaded while the plan was under review; present the plan again',
  aborted: 'the plan review was aborted',
  disposedBeforeTurn: "plan-mode service was disposed before this call's turn came; nothing was done",
  /** R81: what a boundary tells of a durable approval. */
  approvedNews: 'The user approved your plan and plan mode is off; carry out the plan, starting now.',
  /** R80: `answerReview` with an answer of the wrong shape. */
  malformedAnswer:
    'answerReview needs a reviewId string and an answer { answers: [{ id: string, selected: string[], custom?: string, comments?: [{ quote, text }] }] }; nothing was changed',
  /** R101: what a leave fails the exit call with, and what a boundary tells of a durable leave. */
  left: 'The user left plan mode without carrying out the plan; stop here and wait for their message.',
  /** R94: the message of the `'stop'` policy's rejection (`HEADLESS_STOP_MESSAGE`). */
  headlessStop: "the headless review policy 'stop' dismissed the plan review",
  flushFailed: 'plan-mode: step-boundary flush failed',
  recordFailed: 'plan-mode: review record failed',
  offWithAttachments: 'Image attachments cannot accompany /plan off.',
  cannotSteer: 'This agent cannot take a plan message; use /plan alone.',
  notChanged: 'Plan mode could not be changed: ',
  leave: {
    committed: 'Plan mode off.',
    queued: 'Leaving plan mode (applies from the next step).',
    cancelled: 'Plan mode entry cancelled.',
    noop: 'Plan mode is already inactive.',
  },
  enter: {
    committed: 'Plan mode on. Use /plan off to leave.',
    queued: 'Entering plan mode (applies from the next step). Use /plan off to leave.',
    cancelled: 'Plan mode exit cancelled. Use /plan off to leave.',
    noop: 'Plan mode is already on. Use /plan off to leave.',
  },
} as const

/** R73: the one warning of an abandoned close, and what the operation waiting for that work fails with. */
export function abandonedText(closeTimeoutMs: number): string {
  return `plan-mode: the session log did not settle within ${closeTimeoutMs} ms of a reload or detach; work in flight was abandoned`
}

/**
 * R94: the `TypeError` for any policy but `'stop'` and `'approve'`: `String(policy)`, or the
 * object's tag when `String` throws.
 */
export function badPolicyText(policy: unknown): string {
  let shown: string
  try {
    shown = String(policy)
  } catch {
    shown = Object.prototype.toString.call(policy)
  }
  return `headless review policy must be 'stop' or 'approve'; got ${shown}`
}

/** R80: an answer refused because the review it names is closed, with the outcome the log holds. */
export function alreadyClosedText(reviewId: string, outcome: string): string {
  return `plan review ${reviewId} is already closed (${outcome}); nothing was changed`
}

/** R94: who decided: `by: 'policy'` when a headless policy did, else nothing (a user's has no `by`). */
function byOf(source: unknown): { by?: 'policy' } {
  return (source as { by?: unknown } | null | undefined)?.by === 'policy' ? { by: 'policy' } : {}
}

/** R73: the close timeout when the service is given none. */
export const DEFAULT_CLOSE_TIMEOUT_MS = 5000

/** R42.5: 256 KiB of UTF-8. */
const MAX_PLAN_BYTES = 256 * 1024

// ---------------------------------------------------------------------------------------------
// Pure folds of a log (R2, R5, R31, R58, R64)

/** R2: `active` of the last `plan/mode`, or false. */
export function foldF(log: readonly LogEntry[]): boolean {
  let active = false
  for (const entry of log) if (entry.type === 'plan/mode') active = (entry.data as { active: boolean }).active
  return active
}

/** R5: the latest of turn/start, turn/end is a turn/start. */
export function foldOpenTurn(log: readonly LogEntry[]): boolean {
  let open = false
  for (const entry of log) {
    if (entry.type === 'turn/start') open = true
    else if (entry.type === 'turn/end') open = false
  }
  return open
}

/** R31: the last request/header (the fold there) or approved plan/review (inactive), whichever is later. */
export function foldK(log: readonly LogEntry[]): boolean | undefined {
  let told: boolean | undefined
  let active = false
  const stray = strayRecords(log)
  log.forEach((entry, index) => {
    if (entry.type === 'plan/mode') active = (entry.data as { active: boolean }).active
    else if (entry.type === 'request/header') told = active
    else if (entry.type === 'plan/review' && tellsApproval(entry.data) && !stray.has(index)) told = false
  })
  return told
}

/**
 * R79, R80: the indices of the durable records that close no open review (a lost racing answer's,
 * one of an id never requested): they change nothing, for K (R31) and the kept selection (R58)
 * as for the open review.
 */
function strayRecords(log: readonly LogEntry[]): Set<number> {
  const stray = new Set<number>()
  let open: string | null = null
  log.forEach((entry, index) => {
    const data = durableRecord(entry)
    if (!data) return
    if (data.outcome === 'requested') open = data.reviewId as string
    else if (open === data.reviewId && CLOSING_OUTCOMES.includes(String(data.outcome))) open = null
    else stray.add(index)
  })
  return stray
}

/**
 * R31, R81: an approved review told the model it left plan mode: a channel's, or a durable one told
 * in its call's result. R101: a leave (`left`) tells K like an approval.
 */
function tellsApproval(data: unknown): boolean {
  const record = data as { outcome?: unknown; reviewId?: unknown; toldInResult?: unknown }
  return leaves(record.outcome) && (typeof record.reviewId !== 'string' || record.toldInResult === true)
}

/** R47, R101: the outcomes that leave plan mode: an approval (fresh or not), and a leave. */
function leaves(outcome: unknown): boolean {
  return outcome === 'approved' || outcome === 'left'
}

/** A durable review the log holds open, as `openReview` shows it (R79). */
export interface OpenReviewExpectation {
  reviewId: string
  title: string
  plan: string
  /** The seq of its request record (the oracle's logs start at seq 1); `openReview` shows the plan's version here (R138). */
  version: number
  /** `openReview` only: the seq of its request record (R138). */
  seq?: number
  callId?: string
}

/**
 * R96, R138: the version of the plan the record at `seq` presented (the oracle's logs start at seq
 * 1): the plans presented since the last `plan/mode` before it, itself included. A plan is
 * presented by a channel review's closing record or a durable request.
 */
export function presentedVersionIn(log: readonly LogEntry[], seq: number): number {
  let version = 0
  for (const entry of log.slice(0, seq)) {
    if (entry.type === 'plan/mode') version = 0
    if (entry.type !== 'plan/review') continue
    const data = entry.data as { outcome?: unknown; plan?: unknown; reviewId?: unknown } | null
    if (data === null || typeof data !== 'object' || typeof data.plan !== 'string') continue
    const presents = typeof data.reviewId === 'string' ? data.outcome === 'requested' : CLOSING_OUTCOMES.includes(String(data.outcome))
    if (presents) version++
  }
  return version
}

/** A durable review's outcome the model has not been told yet (R81). */
export interface ReviewNewsExpectation {
  outcome: 'approved' | 'left' | 'keep-planning' | 'superseded'
  feedback?: string
}

/** What the log says of durable reviews (R79–R81). */
export interface DurableFold {
  open: OpenReviewExpectation | null
  /** The last durable review closed, and how, unless a review was requested since (R80: a late answer is refused naming it). */
  closed: { reviewId: string; outcome: string } | null
  news: ReviewNewsExpectation | null
}

const CLOSING_OUTCOMES = ['approved', 'left', 'keep-planning', 'dismissed', 'failed', 'aborted', 'superseded', 'reloaded']

/** A durable review's record: a `plan/review` with a string `reviewId` (R79). */
function durableRecord(entry: LogEntry): Record<string, unknown> | null {
  if (entry.type !== 'plan/review' || typeof entry.data !== 'object' || entry.data === null) return null
  const data = entry.data as Record<string, unknown>
  return typeof data.reviewId === 'string' ? data : null
}

/**
 * R80: two closing records that cannot be told apart by their content: the same outcome, feedback
 * and telling, (R95: `by` is part of an outcome) the same decider, a policy or a user, and (R101)
 * both fresh approvals or neither.
 */
function sameOutcome(first: Record<string, unknown> | null, own: Record<string, unknown>): boolean {
  return (
    first !== null &&
    first.outcome === own.outcome &&
    first.feedback === own.feedback &&
    (first.toldInResult === true) === (own.toldInResult === true) &&
    (first.by === 'policy') === (own.by === 'policy') &&
    (first.fresh === true) === (own.fresh === true)
  )
}

/** R81: what a closing record leaves the next boundary to tell. */
export function newsOfRecord(data: Record<string, unknown>): ReviewNewsExpectation | null {
  if (data.toldInResult === true) return null
  if (data.outcome === 'approved' || data.outcome === 'left' || data.outcome === 'superseded') return { outcome: data.outcome }
  if (data.outcome !== 'keep-planning') return null
  return typeof data.feedback === 'string' ? { outcome: 'keep-planning', feedback: data.feedback } : { outcome: 'keep-planning' }
}

/**
 * R79–R81 at attach: the open review is the one of the last `requested` record unless a closing
 * record of its id follows it; the last one closed and its outcome, unless a request followed it
 * (R80); the untold outcome: the closing record of the last review closed, unless it was told in
 * the result or a request/header or a new request follows it.
 */
export function foldReviews(log: readonly LogEntry[]): DurableFold {
  const fold: DurableFold = { open: null, closed: null, news: null }
  log.forEach((entry, index) => {
    if (entry.type === 'request/header') fold.news = null
    const data = durableRecord(entry)
    if (!data) return
    const reviewId = data.reviewId as string
    if (data.outcome === 'requested') {
      fold.open = {
        reviewId,
        title: String(data.title),
        plan: String(data.plan),
        version: index + 1,
        ...(typeof data.callId === 'string' ? { callId: data.callId } : {}),
      }
      // R80: "the last durable review closed … and no review was requested since".
      fold.closed = null
      fold.news = null
    } else if (fold.open?.reviewId === reviewId && CLOSING_OUTCOMES.includes(String(data.outcome))) {
      fold.open = null
      fold.closed = { reviewId, outcome: String(data.outcome) }
      fold.news = newsOfRecord(data)
    }
  })
  return fold
}

/** R81: the text a boundary tells of a durable review's outcome. */
export function newsMessage(news: ReviewNewsExpectation): string {
  if (news.outcome === 'approved') return TEXT.approvedNews
  if (news.outcome === 'left') return TEXT.left // R101
  if (news.outcome === 'superseded') return TEXT.superseded
  return news.feedback === undefined ? TEXT.keepPlanning : TEXT.keepPlanningFeedback + news.feedback
}

/** R80: a well-formed answer: `{ answers: [...] }` of objects with a string id, string selections, an optional string custom. */
export function isWellFormedAnswer(answer: unknown): boolean {
  const answers = (answer as { answers?: unknown } | null)?.answers
  if (typeof answer !== 'object' || answer === null || !Array.isArray(answers)) return false
  return answers.every((item: unknown) => {
    const { id, selected, custom } = (item ?? {}) as { id?: unknown; selected?: unknown; custom?: unknown }
    return (
      typeof item === 'object' &&
      item !== null &&
      typeof id === 'string' &&
      Array.isArray(selected) &&
      selected.every((label) => typeof label === 'string') &&
      (custom === undefined || typeof custom === 'string')
    )
  })
}

/** R58: the kept selection: the latest settled successful `/plan` or approved exit not yet followed by a `plan/mode`. */
export function foldKept(log: readonly LogEntry[]): boolean | null {
  let kept: boolean | null = null
  const runs = new Map<string, boolean>()
  const stray = strayRecords(log)
  for (const [index, entry] of log.entries()) {
    const data = entry.data as Record<string, unknown>
    if (stray.has(index)) continue
    if (entry.type === 'plan/mode') kept = null
    else if (entry.type === 'command/run' && data.name === 'plan' && typeof data.args === 'string') {
      runs.set(String(data.commandId), data.args.trim().toLowerCase() !== 'off')
    } else if (entry.type === 'command/done' && runs.has(String(data.commandId))) {
      const selected = runs.get(String(data.commandId))!
      runs.delete(String(data.commandId))
      if (data.kind === 'success') kept = selected
    } else if (entry.type === 'plan/review' && leaves(data.outcome)) kept = false // R58; R101: a leave too
  }
  return kept
}

/** R98 (R94, R101): the plan approved last, as `approvedPlan` returns it. */
export interface ApprovedPlanExpectation {
  title: string
  plan: string
  seq: number
  by?: 'policy'
  fresh?: true
}

/**
 * R98: `{ title, plan, seq, by? }` of the latest `plan/review { outcome: 'approved' }` (R101:
 * `fresh: true` when it was approved into a fresh context), or null before any approval and once a
 * `plan/mode { active: true }` follows it. A durable record that closes no open review (a lost
 * racing answer's) changes nothing (R79, R80). (The oracle's logs start at seq 1.)
 */
export function foldApprovedPlan(log: readonly LogEntry[]): ApprovedPlanExpectation | null {
  let approved: ApprovedPlanExpectation | null = null
  const stray = strayRecords(log)
  log.forEach((entry, index) => {
    const data = (typeof entry.data === 'object' && entry.data !== null ? entry.data : {}) as Record<string, unknown>
    if (entry.type === 'plan/mode' && data.active === true) approved = null
    else if (entry.type === 'plan/review' && data.outcome === 'approved' && !stray.has(index)) {
      approved = {
        title: String(data.title),
        plan: String(data.plan),
        seq: index + 1,
        ...(data.by === 'policy' ? { by: 'policy' as const } : {}),
        ...(data.fresh === true ? { fresh: true as const } : {}),
      }
    }
  })
  return approved
}

/** R64: P after attach: the kept selection where it differs from F. */
export function foldP(log: readonly LogEntry[]): boolean | undefined {
  const kept = foldKept(log)
  return kept !== null && kept !== foldF(log) ? kept : undefined
}

/** R42.4: the trimmed plan starts with an ATX heading with text on its line. */
export function startsWithHeading(plan: string): boolean {
  return /^#{1,6}[ \t]+[^ \t\r\n]/.test(plan.trim())
}

/** R49, R51: the text of the first markdown heading of any level, trailing whitespace removed. */
export function headingTitle(plan: string): string | undefined {
  for (const line of plan.split('\n')) {
    const match = /^[ \t]*#{1,6}[ \t]+([^ \t\r\n].*)$/.exec(line)
    if (match) return match[1]!.trimEnd()
  }
  return undefined
}

/** R44, R45: consent, or keep planning with the feedback to quote. */
export function readAnswer(answer: AnswerLike | undefined): { approved: true } | { approved: false; feedback?: string } {
  const all = Array.isArray(answer?.answers) ? (answer!.answers as unknown[]) : []
  const items = all.filter((item) => (item as { id?: unknown } | null)?.id === 'plan-review') as {
    selected?: unknown
    custom?: unknown
  }[]
  if (items.length !== 1) return { approved: false }
  const item = items[0]!
  const custom = typeof item.custom === 'string' ? item.custom : undefined
  const blank = custom === undefined || custom.trim() === ''
  const selected = Array.isArray(item.selected) ? item.selected : []
  if (selected.length === 1 && selected[0] === 'Approve' && blank) return { approved: true }
  return blank ? { approved: false } : { approved: false, feedback: custom! }
}

/** Which decisions a service's reviews offer (R101). */
export type Decisions = 'approve-or-keep' | 'all'


/** R101: what an answer decides. */
export type Decision =
  | { outcome: 'approved'; fresh?: true }
  | { outcome: 'left' }
  | { outcome: 'keep-planning'; feedback?: string }

/**
 * R44, R45, R101: the answer read against the decisions offered: one option alone with nothing
 * else said (no custom text, no comments) decides; anything else keeps planning, with the
 * non-blank custom text as feedback. The labels R101 adds are read only when offered. (Comments,
 * R100, are not modelled beyond this: an item with any makes a keep-planning answer, whose
 * feedback here is the custom text alone.)
 */
export function readDecision(answer: AnswerLike | undefined, decisions: Decisions): Decision {
  const all = Array.isArray(answer?.answers) ? (answer!.answers as unknown[]) : []
  const items = all.filter((item) => (item as { id?: unknown } | null)?.id === 'plan-review') as {
    selected?: unknown
    custom?: unknown
    comments?: unknown
  }[]
  if (items.length !== 1) return { outcome: 'keep-planning' }
  const item = items[0]!
  const custom = typeof item.custom === 'string' ? item.custom : undefined
  const blank = custom === undefined || custom.trim() === ''
  const commented = Array.isArray(item.comments) && item.comments.length > 0
  const selected = Array.isArray(item.selected) ? item.selected : []
  const only = selected.length === 1 && blank && !commented ? selected[0] : undefined
  if (only === 'Approve') return { outcome: 'approved' }
  if (decisions === 'all' && only === 'Approve in a fresh context') return { outcome: 'approved', fresh: true }
  if (decisions === 'all' && only === 'Leave plan mode') return { outcome: 'left' }
  return blank ? { outcome: 'keep-planning' } : { outcome: 'keep-planning', feedback: custom! }
}

/** R46: the message an aborted call fails with. */
export function abortReasonMessage(reason: unknown): string {
  return reason instanceof Error ? reason.message : TEXT.aborted
}

// ---------------------------------------------------------------------------------------------
// The model

interface Settlement {
  outcome: 'approved' | 'left' | 'keep-planning' | 'dismissed' | 'failed' | 'aborted' | 'superseded' | 'reloaded'
  error?: string
  feedback?: string
  /** R94: a headless policy decided it (an answer or a dismissal that said so). */
  by?: 'policy'
  /** R101: an approval into a fresh context. */
  fresh?: true
}

/** How a durable review is closed by `answerReview` or a policy (R80, R95, R101). */
interface DurableVerdict {
  outcome: 'approved' | 'left' | 'keep-planning' | 'dismissed'
  feedback?: string
  by?: 'policy'
  fresh?: true
}

interface Review {
  plan: string
  title: string
  call: OracleCall<ExitResult>
  ask: ExpectedAsk | null
  /** `asking`: waits for the user; `answered`: its settlement waits in the queue; `recording`: closed, being recorded. */
  phase: 'asking' | 'answered' | 'recording'
  settlement: Settlement | null
}

interface Attachment {
  readonly agentId: string
  P: boolean | undefined
  K: boolean | undefined
  review: Review | null
  closing: boolean
  /** K can be rebuilt from the log (R31): false after an approval whose record failed (R49). */
  toldIsLogged: boolean
  /** Durable reviews as this attachment follows them (R79–R81; see the file comment). */
  durable: DurableBelief
  /** R86: the logged `/plan` runs this attachment heard whose `command/done` has not come, and their selections. */
  heardRuns: Map<string, boolean>
  /** This attachment's own `plan/mode` appends in flight: a heard `/plan` waits for them (R86). */
  modeAppends: number
  /** R86: the latest heard `/plan` success that came while a `plan/mode` append of its own was in flight. */
  deferredHeard?: boolean
}

/** An attachment's view of the durable reviews (R79–R81). */
interface DurableBelief extends DurableFold {
  /**
   * This service's own record of the open review in flight (an answer, a supersede), and the
   * first closing record of that review the log held since (ours or another writer's): applied
   * once ours settles (see the file comment), as it reads before what the log held after it
   * (`after`: a `plan/mode`, a request header; R16, R30, R58, R81).
   */
  inFlight: { reviewId: string; own: Record<string, unknown>; first: Record<string, unknown> | null; after?: { planMode?: true; header?: true } } | null
  /** This service's own request record is in flight (R79): until it settles, `openReview` shows none. */
  requesting: boolean
  /** R81, R19: a failed flush kept `news`; the next request header is that step's and tells nothing. */
  keptPastHeader?: boolean
}

/**
 * One agent. Its operations are serialized across attachments too (§1: "of one agent"): a call
 * after a detach waits for the operations the detached attachment still runs.
 */
interface AgentModel {
  readonly id: string
  readonly log: LogEntry[]
  attachment: Attachment | null
  /** A detached attachment whose work in flight has not finished yet. */
  closing: Attachment | null
  /** How many times the agent was detached: an exit call made before a detach fails as reloaded (R63). */
  detaches: number
  /** Operations waiting for their turn (§1). */
  queue: (() => void)[]
  /**
   * The operation in progress: its end, once its logic is done and no append is in flight;
   * `abandon` fails its call when a close gives up on its work (R73).
   */
  running: { done: boolean; finish: () => void; abandon: (message: string) => void; attachment: Attachment | null } | null
  /** The service's appends for this agent in flight. */
  inflight: number
  /**
   * R73: the appends a close abandoned that have not settled yet, registered when it gave up on
   * them, until the agent's next operation takes its turn (then `waiting`) or they all settle.
   */
  abandoned: AbandonedWait | null
  /** R73: the running operation's wait for those appends (`running` holds its turn meanwhile). */
  waiting: AbandonedWait | null
}

/** The wait of R73 for the appends a closed attachment abandoned. */
interface AbandonedWait {
  /** The handles of those appends not settled yet. */
  readonly unsettled: Set<number>
  /** Goes on with the operation that waits, once one does. */
  resume: (() => void) | null
}

/** Options of the modelled service. */
export interface OracleOptions {
  section: string
  /** Whether the service has a review channel (R42.8). */
  hasChannel: boolean
  /** Decides each append the service makes (default: it lands at once). */
  appendFate?: (agentId: string, type: string, data: unknown) => AppendFate
  /** The service's `closeTimeoutMs` (R73; default 5000). */
  closeTimeoutMs?: number
  /** R78: the service's reviews (default `'channel'`). */
  reviews?: 'channel' | 'durable'
  /** R101: the decisions the service's reviews offer (default `'approve-or-keep'`). */
  decisions?: Decisions
}

/** What a test passes for an exit-tool call. */
export interface ExecuteInput {
  /** The calling agent's id, or undefined for a call without agent (R42.1). */
  agentId: string | undefined
  args: unknown
  /** The agent has a non-empty owner (R42.7). */
  owned?: boolean
  /** The call's signal is already aborted with this reason (R46). */
  preAborted?: { reason: unknown }
  /** The channel throws this synchronously when asked (R46: any synchronous throw). */
  askThrows?: Error
  /** A durable service: the id the service draws for the review this call would open (R79). */
  reviewId?: string
  /** `ExitToolContext.callId` (R79). */
  callId?: unknown
}

/** What a test passes for a `/plan` run. */
export interface CommandInput {
  agentId: string
  rawInput: string
  attachments?: unknown[]
  /** The agent has `steer` (R57). */
  canSteer: boolean
}

/** An executable model of SPEC.md. See the file comment. */
export class PlanModeOracle {
  readonly section: string
  readonly hasChannel: boolean
  /** R78: every review of the service is durable. */
  readonly durableReviews: boolean
  /** R101: the decisions the reviews offer. */
  readonly decisions: Decisions
  readonly closeTimeoutMs: number
  appendFate: (agentId: string, type: string, data: unknown) => AppendFate
  readonly warnings: ExpectedWarning[] = []
  readonly asks: ExpectedAsk[] = []
  readonly steers: ExpectedSteer[] = []
  readonly calls: OracleCall[] = []
  disposed = false
  private readonly agents = new Map<string, AgentModel>()
  /** `owner`: the attachment that made the append; `then`: what its settlement does (nothing once abandoned, R73). */
  private readonly held = new Map<number, HeldAppend & { owner: Attachment; then: (error: Error | null) => void }>()
  private nextHandle = 1
  /** Per agent, where in its log `plan/mode` appends that may repeat the one before landed (`mayRepeat`). */
  private readonly repeatable = new Map<string, Set<number>>()
  private readonly draining = new Set<AgentModel>()
  /** Exit-tool calls waiting for their turn to open a review. */
  private readonly waitingCalls = new Set<OracleCall>()
  private nextCall = 1

  constructor(options: OracleOptions) {
    this.section = options.section
    this.hasChannel = options.hasChannel
    this.durableReviews = options.reviews === 'durable'
    this.decisions = options.decisions ?? 'approve-or-keep'
    this.closeTimeoutMs = options.closeTimeoutMs ?? DEFAULT_CLOSE_TIMEOUT_MS
    this.appendFate = options.appendFate ?? (() => ({ kind: 'ok' }))
  }

  /** Starts the model of an agent whose log already holds `seed` (R4: a fork inherits its fold). */
  addAgent(agentId: string, seed: readonly LogEntry[] = []): void {
    this.agents.set(agentId, { id: agentId, log: seed.map((e) => ({ ...e })), attachment: null, closing: null, detaches: 0, queue: [], running: null, inflight: 0, abandoned: null, waiting: null })
  }

  /** The agent's log as it must be now. */
  log(agentId: string): readonly LogEntry[] {
    return this.model(agentId).log
  }

  /** The appends the test holds. */
  heldAppends(): HeldAppend[] {
    return [...this.held.values()].filter((h) => !h.settled)
  }

  // ----- observations ------------------------------------------------------------------------

  /** R7. Throws like the service after dispose (R60). */
  get(agentId: string): { active: boolean; pending?: boolean } {
    const a = this.readAttachment(agentId)
    const F = foldF(this.model(agentId).log)
    return a.P === undefined ? { active: F } : { active: F, pending: a.P }
  }

  /** R21. */
  sectionOf(agentId?: string): string {
    if (agentId === undefined) return ''
    const a = this.readAttachment(agentId)
    return this.effective(a) ? this.section : ''
  }

  /** K of the current attachment (R30), for tests that read it through notices. */
  told(agentId: string): boolean | undefined {
    return this.readAttachment(agentId).K
  }

  /** Whether K can be rebuilt from the log now (R31); false after an approval whose record failed. */
  toldIsLogged(agentId: string): boolean {
    return this.readAttachment(agentId).toldIsLogged
  }

  /** Whether the agent has an exit-tool call whose review is open (R42.6). */
  hasOpenReview(agentId: string): boolean {
    const a = this.model(agentId).attachment
    return a !== null && a.review !== null
  }

  /** R79: the durable review the agent's log holds open, as `openReview` returns it. Throws like the service after dispose (R60). */
  openReview(agentId: string): OpenReviewExpectation | null {
    const { open, inFlight, requesting } = this.readAttachment(agentId).durable
    if (open === null || inFlight !== null || requesting) return null
    // R138: the view's version is the plan's within its episode; seq is the request's (the fold's version).
    return { ...open, version: presentedVersionIn(this.model(agentId).log, open.version), seq: open.version }
  }

  /** The durable review the agent's log holds open, also while this service records an outcome of it (R79). */
  reviewHeldOpen(agentId: string): OpenReviewExpectation | null {
    const { open } = this.readAttachment(agentId).durable
    return open === null ? null : { ...open }
  }

  /** Whether this service's own closing record of the open durable review (an answer, a supersede) is in flight (R80). */
  ownRecordInFlight(agentId: string): boolean {
    return this.readAttachment(agentId).durable.inFlight !== null
  }

  /** R80: the last durable review closed, as the agent's attachment knows it (a late answer names it). */
  lastClosedReview(agentId: string): { reviewId: string; outcome: string } | null {
    return this.readAttachment(agentId).durable.closed
  }

  /** The service attached the agent without a call (`actor(agent)`): so does the oracle. */
  attachNow(agentId: string): void {
    this.readAttachment(agentId)
  }

  /** Whether an exit-tool call still waits for its turn to open its review (§1). */
  isWaiting(call: OracleCall): boolean {
    return this.waitingCalls.has(call)
  }

  /** Whether the agent's current attachment is running an operation or an append. */
  isBusy(agentId: string): boolean {
    const m = this.model(agentId)
    return m.running !== null || m.inflight > 0
  }

  // ----- the host's own log appends ------------------------------------------------------------

  /** The host (or another writer) appends an event directly (turn bounds, request header, commands, a foreign `plan/mode`). */
  hostAppend(agentId: string, type: string, data: unknown): void {
    this.land(agentId, type, data)
  }

  // ----- service calls -------------------------------------------------------------------------

  /** `set(agent, active)` (R8–R13). */
  set(agentId: string, active: boolean): OracleCall<SetOutcome> {
    const call = this.call<SetOutcome>('set', agentId)
    if (this.failIfDisposed(call)) return call
    this.enqueue(
      agentId,
      (a, done) => this.select(a, active, (outcome) => done(() => this.settle(call, outcome)), (error) => done(() => this.fail(call, error.message))),
      (message) => this.fail(call, message),
    )
    return call
  }

  /** `stepBoundary(agent, { signal })` (R14–R20, R30–R36). */
  boundary(agentId: string, { aborted = false }: { aborted?: boolean } = {}): OracleCall<BoundaryExpectation> {
    const call = this.call<BoundaryExpectation>('boundary', agentId)
    if (this.failIfDisposed(call)) return call
    this.enqueue(agentId, (a, done) => this.stepBoundary(a, aborted, (result) => done(() => this.settle(call, result))), (message) =>
      this.fail(call, message),
    )
    return call
  }

  /** `command.run` (R53–R57). The host's `command/run`/`command/done` are the test's to log. */
  command(input: CommandInput): OracleCall<CommandExpectation> {
    const call = this.call<CommandExpectation>('command', input.agentId)
    if (this.failIfDisposed(call)) return call
    const message = input.rawInput.trim()
    const attachments = input.attachments ?? []
    const entering = message.toLowerCase() !== 'off'
    if (!entering && attachments.length > 0) {
      this.settle(call, { kind: 'error', text: TEXT.offWithAttachments })
      return call
    }
    const steers = entering && (message !== '' || attachments.length > 0)
    if (steers && !input.canSteer) {
      this.settle(call, { kind: 'error', text: TEXT.cannotSteer })
      return call
    }
    this.enqueue(input.agentId, (a, done) =>
      this.select(
        a,
        entering,
        (outcome) =>
          done(() => {
            const texts = entering ? TEXT.enter : TEXT.leave
            // R55, R56: a noop names a selection already on its way.
            const text = outcome === 'noop' && a.P === entering ? texts.queued : texts[outcome]
            if (steers) {
              this.steers.push({
                agentId: input.agentId,
                content: message === '' ? [...attachments] : [...attachments, { type: 'text', text: message }],
              })
            }
            this.settle(call, { kind: 'success', text })
          }),
        (error) => done(() => this.settle(call, { kind: 'error', text: TEXT.notChanged + error.message })),
      ),
      (message) => this.settle(call, { kind: 'error', text: TEXT.notChanged + message }),
    )
    return call
  }

  /** `exitTool.execute` (R42–R49; a durable service's, R79). */
  execute(input: ExecuteInput): OracleCall<ExitResult> {
    const call = this.call<ExitResult>('review', input.agentId)
    if (this.failIfDisposed(call)) return call
    if (input.preAborted) return this.fail(call, abortReasonMessage(input.preAborted.reason))
    if (input.agentId === undefined) return this.fail(call, TEXT.noAgent)
    this.readAttachment(input.agentId)
    const detachesAtCall = this.model(input.agentId).detaches
    const plan = (input.args as { plan?: unknown } | null | undefined)?.plan
    if (typeof plan !== 'string') return this.fail(call, TEXT.planNotString)
    this.waitingCalls.add(call)
    /** A durable call's request record is in flight (R79): a close that abandons it fails the call (R73). */
    let requesting = false
    this.enqueue(input.agentId, (a, done) => {
      // R46: a call whose signal aborted while it waited for its turn has already failed.
      if (!this.waitingCalls.delete(call)) return done(() => {})
      const refuse = (message: string) => done(() => this.fail(call, message))
      // Interpretation: a call whose agent was detached while it waited for its turn fails like
      // a review open at that moment (R63), instead of asking on an attachment that is gone.
      // One made after a detach opens on the next attachment, unless another detach came too.
      if (this.model(a.agentId).detaches !== detachesAtCall) return refuse(TEXT.reloaded)
      if (!this.effective(a)) return refuse(TEXT.notInPlanMode)
      if (!startsWithHeading(plan)) return refuse(TEXT.noHeading)
      if (Buffer.byteLength(plan, 'utf8') > MAX_PLAN_BYTES) return refuse(TEXT.tooLarge)
      // R42.6, R79: a durable review the log holds open counts, whoever opened it.
      if (a.review !== null || a.durable.open !== null) return refuse(TEXT.alreadyOpen)
      if (input.owned) return refuse(TEXT.owned)
      if (this.durableReviews) {
        // R79: no check 8 (the log is the channel); the request is appended, and the call is
        // submitted once it landed, or fails with the log's error (nothing is open then).
        const reviewId = input.reviewId
        if (reviewId === undefined) throw new Error('oracle: a durable exit call needs the reviewId the service draws')
        const data = {
          outcome: 'requested',
          reviewId,
          title: headingTitle(plan) ?? 'Plan',
          plan,
          ...(typeof input.callId === 'string' ? { callId: input.callId } : {}),
        }
        requesting = true
        a.durable.news = null // R81: the model asked again
        a.durable.requesting = true
        this.append(a, 'plan/review', data, (error) => {
          requesting = false
          a.durable.requesting = false
          done(() => (error ? this.fail(call, error.message) : this.settle(call, { submitted: true, reviewId })))
        })
        return
      }
      if (!this.hasChannel) return refuse(TEXT.noChannel)
      const ask: ExpectedAsk = { agentId: a.agentId, plan, aborted: false, stale: false }
      this.asks.push(ask)
      a.review = { plan, title: headingTitle(plan) ?? 'Plan', call, ask, phase: 'asking', settlement: null }
      if (input.askThrows) this.answered(a, { outcome: 'failed', error: input.askThrows.message })
      done(() => {})
    }, () => {
      // R60: its turn came after dispose; the review it would have opened was reloaded away.
      // R73: a close gave up on its request record: it fails as reloaded too.
      if (this.waitingCalls.delete(call) || requesting) {
        requesting = false
        this.fail(call, TEXT.reloaded)
      }
    })
    return call
  }

  /** `answerReview(agent, reviewId, answer, { toldInResult })` (R80, R81; an answer with `by: 'policy'`, R94, R95). */
  answerReview(agentId: string, reviewId: unknown, answer: unknown, options: { toldInResult?: boolean } = {}): OracleCall<'approved' | 'keep-planning' | 'left'> {
    const call = this.call<'approved' | 'keep-planning' | 'left'>('answer', agentId)
    if (this.failIfDisposed(call)) return call
    if (typeof reviewId !== 'string' || !isWellFormedAnswer(answer)) return this.fail(call, TEXT.malformedAnswer)
    // R44, R45 in the answer's turn: strict consent; anything else keeps planning, with non-blank
    // custom text as feedback; R101: the decisions offered. R94: an answer with `by: 'policy'` is
    // recorded so. R80 resolves the recorded outcome (R101: `'left'` for a leave).
    const verdict = (): DurableVerdict => ({ ...readDecision(answer as AnswerLike, this.decisions), ...byOf(answer) })
    this.closeDurable(call, agentId, reviewId, verdict, options.toldInResult === true, (outcome) => outcome as 'approved' | 'keep-planning' | 'left')
    return call
  }

  /**
   * `answerReviewByPolicy(agent, policy, { toldInResult })` (R95): the policy is checked first,
   * then `dispose`; the review `openReview` shows when it is called is closed as `answerReview`
   * would close it, with the policy's verdict; with none open, `null` and nothing changes.
   */
  answerReviewByPolicy(
    agentId: string,
    policy: unknown,
    options: { toldInResult?: boolean } = {},
  ): OracleCall<{ reviewId: string; outcome: 'approved' | 'dismissed' } | null> {
    const call = this.call<{ reviewId: string; outcome: 'approved' | 'dismissed' } | null>('answer', agentId)
    if (policy !== 'stop' && policy !== 'approve') return this.fail(call, badPolicyText(policy))
    if (this.failIfDisposed(call)) return call
    const open = this.openReview(agentId)
    if (open === null) return this.settle(call, null)
    const { reviewId } = open
    const verdict = (): DurableVerdict => ({ outcome: policy === 'approve' ? 'approved' : 'dismissed', by: 'policy' })
    this.closeDurable(call, agentId, reviewId, verdict, options.toldInResult === true, (outcome) => ({
      reviewId,
      outcome: outcome as 'approved' | 'dismissed',
    }))
    return call
  }

  /**
   * R80 in the agent's turn: refused when the review is not open; else the verdict is read and its
   * record `{ outcome, reviewId, title, plan, feedback?, toldInResult?, by? }` is appended, and the
   * call resolves with `result(outcome)` once it landed, or fails (the log's error, or lost the race).
   */
  private closeDurable<T>(
    call: OracleCall<T>,
    agentId: string,
    reviewId: string,
    verdictOf: () => DurableVerdict,
    toldInResult: boolean,
    result: (outcome: string) => T,
  ): void {
    this.enqueue(
      agentId,
      (a, done) => {
        const open = a.durable.open
        if (open?.reviewId !== reviewId) {
          const closed = a.durable.closed
          const message =
            closed?.reviewId === reviewId ? alreadyClosedText(reviewId, closed.outcome) : `no plan review ${reviewId} is open for this agent; nothing was changed`
          return done(() => this.fail(call, message))
        }
        const verdict = verdictOf()
        // R49: `by: 'policy'` is the record's last key (R94, R95: after `toldInResult`); R101:
        // `fresh: true` after the others, before `by`.
        const fresh = verdict.fresh === true ? { fresh: true } : {}
        const told = toldInResult ? { toldInResult: true } : {}
        const data: Record<string, unknown> = {
          outcome: verdict.outcome,
          reviewId,
          title: open.title,
          plan: open.plan,
          ...(verdict.feedback !== undefined ? { feedback: verdict.feedback } : {}),
          ...fresh,
          ...told,
          ...(verdict.by === 'policy' ? { by: 'policy' } : {}),
        }
        a.durable.inFlight = { reviewId, own: data, first: null }
        this.append(a, 'plan/review', data, (error) => {
          const first = this.settleOwnRecord(a)
          // R80: not recorded: the answer fails with the log's error (the review stays open,
          // unless another writer's record closed it meanwhile).
          if (error) return done(() => this.fail(call, error.message))
          // R80: the first closing record of the review is the outcome; a later one lost. One
          // identical to ours (outcome, feedback, toldInResult and, R95, by) cannot be told from
          // ours by its content: the answer resolves as the first did.
          if (first === data || sameOutcome(first, data)) return done(() => this.settle(call, result(String(data.outcome))))
          done(() => this.fail(call, alreadyClosedText(reviewId, String(first?.outcome))))
        })
      },
      (message) => this.fail(call, message),
    )
  }

  /** The channel resolves the agent's latest ask with `answer` (R44, R45); a stale ask is ignored (R46). */
  answer(ask: ExpectedAsk, answer: AnswerLike | undefined): void {
    const a = this.reviewOf(ask)
    if (!a) return
    const verdict = readDecision(answer, this.decisions)
    // R94: an answer that says a policy gave it is recorded so; it settles the call all the same.
    const by = byOf(answer)
    this.answered(
      a,
      verdict.outcome === 'approved'
        ? { outcome: 'approved', ...(verdict.fresh ? { fresh: true } : {}), ...by }
        : verdict.outcome === 'left'
          ? { outcome: 'left', error: TEXT.left, ...by } // R101
          : verdict.feedback === undefined
            ? { outcome: 'keep-planning', error: TEXT.keepPlanning, ...by }
            : { outcome: 'keep-planning', error: TEXT.keepPlanningFeedback + verdict.feedback, feedback: verdict.feedback, ...by },
    )
  }

  /** The channel rejects the ask: a dismissal (`code: 'ASK_CANCELLED'`) or any other error (R46). */
  rejectAsk(ask: ExpectedAsk, error: Error & { code?: unknown; by?: unknown }): void {
    const a = this.reviewOf(ask)
    if (!a) return
    // R94: only a dismissal carries its decider; any other rejection is a failure, whoever sent it.
    this.answered(
      a,
      error.code === 'ASK_CANCELLED' ? { outcome: 'dismissed', error: TEXT.dismissed, ...byOf(error) } : { outcome: 'failed', error: error.message },
    )
  }

  /** The exit-tool call's own signal aborts (R46): its review closes at once. */
  abortCall(call: OracleCall, reason: unknown): void {
    if (call.state.status !== 'pending') return
    const m = this.model(call.agentId!)
    const a = [m.attachment, m.closing].find((x) => x?.review?.call === call) ?? m.attachment
    const review = a?.review
    if (a && review && review.call === call && review.phase !== 'recording') {
      this.close(a, { outcome: 'aborted', error: abortReasonMessage(reason) })
      return
    }
    // R46 "also before the question is asked … fails at once": a call still waiting for its turn
    // fails now; when its turn comes it asks nothing and records nothing (no review was opened).
    if (this.waitingCalls.delete(call)) this.fail(call, abortReasonMessage(reason))
  }

  /** `detach(agent)` (R63). */
  detach(agentId: string): void {
    if (this.disposed) throw new Error(TEXT.disposed)
    const m = this.model(agentId)
    const a = m.attachment
    if (!a) return
    m.attachment = null
    m.closing = a
    m.detaches++
    a.closing = true
    if (a.review && a.review.phase !== 'recording') this.close(a, { outcome: 'reloaded', error: TEXT.reloaded })
  }

  /** `dispose()` (R60): every open review fails as reloaded; every later call that names an agent fails. */
  dispose(): void {
    if (this.disposed) return
    for (const id of this.agents.keys()) this.detach(id)
    this.disposed = true
    // R73 "not past dispose()": an operation waiting for abandoned appends goes on at once, and
    // finds the service disposed (R60).
    for (const m of this.agents.values()) {
      m.abandoned = null
      m.waiting?.resume?.()
    }
  }

  /**
   * The service's clock moves on by the close timeout (R73): the test has made it reach every
   * timer started so far. The waits of operations for abandoned appends that had begun end (the
   * operations go on, on the log as it is), then every detached (or disposed) attachment still
   * waiting for its work in flight gives up on it. A wait that an abandonment starts now (its
   * timer starts now) ends at the next expiry.
   */
  expireCloseTimeouts(): void {
    const waits = [...this.agents.values()].filter((m) => m.waiting !== null)
    for (const m of waits) {
      const wait = m.waiting!
      // What was not in the log when the wait gave up may land after the operation's own flip.
      for (const handle of wait.unsettled) if (!this.held.get(handle)!.published) this.held.get(handle)!.mayRepeat = true
      wait.resume?.()
    }
    for (const m of this.agents.values()) if (m.closing && !this.closingIsDone(m)) this.abandon(m)
  }

  /** Whether an operation of the agent is waiting for appends a close abandoned (R73). */
  isWaitingForAbandoned(agentId: string): boolean {
    return this.model(agentId).waiting !== null
  }

  /** Whether the agent has a detached attachment still waiting for its work in flight (R63, R73). */
  isClosing(agentId: string): boolean {
    const m = this.model(agentId)
    return m.closing !== null && !this.closingIsDone(m)
  }

  /**
   * R73: the detached attachment gives up on its work in flight. One warning; the operation
   * waiting for that work fails with the same text; the exit call whose review record never
   * landed fails as reloaded; the attachment is gone (P with it, R64: the next one reads the log,
   * and a pending store, if the service had one, still holds P). Its held appends stay with the
   * test: resolved later, they land in the log and nothing else happens, but the agent's next
   * operation waits for them to settle first (see `awaitAbandoned`).
   */
  private abandon(m: AgentModel): void {
    const a = m.closing!
    const message = abandonedText(this.closeTimeoutMs)
    this.warnings.push({ message, error: undefined })
    const unsettled = new Set<number>()
    for (const h of this.held.values()) {
      if (h.settled || h.owner !== a) continue
      h.abandoned = true
      h.then = () => {}
      m.inflight--
      unsettled.add(h.handle)
    }
    // They may still land: the agent's next operation waits for them first.
    if (unsettled.size > 0) m.abandoned = { unsettled, resume: null }
    const review = a.review
    a.review = null
    if (review && review.call.state.status === 'pending') this.fail(review.call, TEXT.reloaded)
    const running = m.running
    if (running?.attachment === a) {
      m.running = null
      running.abandon(message)
    }
    if (m.inflight !== 0 || m.running?.attachment === a) throw new Error('oracle: an abandoned close left work in flight')
    m.closing = null
    // The operations waiting for their turn run on the next attachment.
    this.maybeFinish(m)
  }

  /** A new service over the same logs (a process restart): every agent re-attaches on its next call (R64). */
  restart(): void {
    this.dispose()
    // The new service does not wait for the old one's work (another writer, R3).
    for (const m of this.agents.values()) m.closing = null
    for (const h of this.held.values()) if (!h.settled && !h.published) h.mayRepeat = true
    this.disposed = false
  }

  // ----- held appends ----------------------------------------------------------------------------

  /**
   * Whether a `plan/mode` append that a close abandoned (R73) has landed in the agent's log after
   * nothing waited for it any more: the agent's next operation waits for such an append, but at
   * most another close timeout (or a new service took over). It was a real flip when it was made
   * (R3), but an operation that went on without it may have made the same flip meanwhile, so the
   * log may then hold a `plan/mode` equal to the one before it. While the wait holds, it cannot.
   */
  abandonedModeLanded(agentId: string): boolean {
    return this.modesThatMayRepeat(agentId).size > 0
  }

  /**
   * The indices in the agent's log of the `plan/mode` events that may repeat the one before them:
   * those of `abandonedModeLanded`, and those the service had started before such a one landed
   * (a real flip when started, R3, they may land after it). Every other one is a real flip.
   */
  modesThatMayRepeat(agentId: string): ReadonlySet<number> {
    return this.repeatable.get(agentId) ?? new Set()
  }

  /** The held append's event lands in the log (its subscribers are told) before `append` resolves. */
  publish(handle: number): void {
    const h = this.held.get(handle)!
    if (h.published) return
    h.published = true
    if (h.mayRepeat && h.type === 'plan/mode') {
      const indices = this.repeatable.get(h.agentId) ?? new Set<number>()
      indices.add(this.model(h.agentId).log.length)
      this.repeatable.set(h.agentId, indices)
      // Started on a log without it, the agent's other `plan/mode` appends in flight may repeat it.
      for (const other of this.held.values()) {
        if (other.agentId === h.agentId && other.type === 'plan/mode' && !other.published && !other.settled) other.mayRepeat = true
      }
    }
    this.land(h.agentId, h.type, h.data)
  }

  /** The held append resolves (landing first if it had not). */
  resolve(handle: number): void {
    this.publish(handle)
    const h = this.held.get(handle)!
    h.settled = true
    h.then(null)
    this.abandonedSettled(h)
  }

  /** The held append rejects; it never lands. */
  reject(handle: number, error: Error): void {
    const h = this.held.get(handle)!
    if (h.published) throw new Error('oracle: a published append cannot fail')
    h.settled = true
    h.then(error)
    this.abandonedSettled(h)
  }

  /**
   * R73: an abandoned append settled. Once all that a close abandoned have, there is nothing left
   * to wait for: the operation waiting goes on, or the next one will not wait.
   */
  private abandonedSettled(h: HeldAppend): void {
    if (!h.abandoned) return
    const m = this.model(h.agentId)
    const registered = m.abandoned
    if (registered?.unsettled.delete(h.handle) && registered.unsettled.size === 0) m.abandoned = null
    const wait = m.waiting
    if (wait?.unsettled.delete(h.handle) && wait.unsettled.size === 0) wait.resume?.()
  }

  // ----- internals -------------------------------------------------------------------------------

  private model(agentId: string): AgentModel {
    const m = this.agents.get(agentId)
    if (!m) throw new Error(`oracle: unknown agent ${agentId}`)
    return m
  }

  /** The first call naming an agent attaches it from its log (R64); a disposed service refuses (R60). */
  private attach(agentId: string): Attachment {
    if (this.disposed) throw new Error(TEXT.disposed)
    const m = this.model(agentId)
    if (!m.attachment) {
      m.attachment = {
        agentId,
        P: foldP(m.log),
        K: foldK(m.log),
        review: null,
        closing: false,
        toldIsLogged: true,
        durable: { ...foldReviews(m.log), inFlight: null, requesting: false },
        heardRuns: new Map(),
        modeAppends: 0,
      }
    }
    return m.attachment
  }

  private F(a: Attachment): boolean {
    return foldF(this.model(a.agentId).log)
  }

  private openTurn(a: Attachment): boolean {
    return foldOpenTurn(this.model(a.agentId).log)
  }

  /** E: P's target when P exists, else F (§0). */
  private effective(a: Attachment): boolean {
    return a.P ?? this.F(a)
  }

  private call<T>(kind: OracleCall['kind'], agentId: string | undefined): OracleCall<T> {
    const call: OracleCall<T> = { id: this.nextCall++, kind, agentId, state: { status: 'pending' } }
    this.calls.push(call as OracleCall)
    return call
  }

  private settle<T>(call: OracleCall<T>, value: T): OracleCall<T> {
    call.state = { status: 'resolved', value }
    return call
  }

  private fail<T>(call: OracleCall<T>, message: string): OracleCall<T> {
    call.state = { status: 'rejected', message }
    return call
  }

  private failIfDisposed(call: OracleCall<any>): boolean {
    if (!this.disposed) return false
    this.fail(call, TEXT.disposed)
    return true
  }

  /** An event lands in the agent's log; a request header tells the model the fold there (R30). */
  private land(agentId: string, type: string, data: unknown): void {
    const m = this.model(agentId)
    m.log.push({ type, data })
    if (type === 'request/header') {
      // Every attachment still following the log hears it; only the current one matters later.
      for (const a of [m.attachment, m.closing]) {
        if (!a) continue
        if (a.durable.inFlight?.first) a.durable.inFlight.after = { ...a.durable.inFlight.after, header: true }
        a.K = foldF(m.log)
        a.toldIsLogged = true
        // R81: a step ran since the record: the outcome was told there (by any writer), unless
        // this attachment's own flush failed at that step.
        if (a.durable.keptPastHeader) a.durable.keptPastHeader = false
        else a.durable.news = null
      }
    }
    if (type === 'command/run' || type === 'command/done') return this.hearCommand(m, type, data)
    if (type === 'plan/mode') {
      // R16: P's target logged by another writer: P goes at once (this one's own append in
      // flight decides when it settles).
      for (const a of [m.attachment, m.closing]) if (a && a.modeAppends === 0 && a.P === (data as { active: boolean }).active) a.P = undefined
      for (const a of [m.attachment, m.closing]) if (a?.durable.inFlight?.first) a.durable.inFlight.after = { ...a.durable.inFlight.after, planMode: true }
      return
    }
    const record = durableRecord({ type, data })
    if (!record) return
    const version = m.log.length
    for (const a of [m.attachment, m.closing]) {
      if (!a) continue
      const reviewId = record.reviewId as string
      if (record.outcome === 'requested') {
        // R79: the latest request is open; R81: it drops an untold outcome.
        a.durable.open = {
          reviewId,
          title: String(record.title),
          plan: String(record.plan),
          version,
          ...(typeof record.callId === 'string' ? { callId: record.callId } : {}),
        }
        // R80: a late answer names the last review closed only when no review was requested since.
        a.durable.closed = null
        a.durable.news = null
      } else if (CLOSING_OUTCOMES.includes(String(record.outcome))) {
        const inFlight = a.durable.inFlight
        // Our own record of this review is in flight: the first one the log holds waits for it.
        if (inFlight?.reviewId === reviewId) inFlight.first ??= record
        else this.applyClosing(a, record)
      }
    }
  }

  /**
   * R86: a logged `/plan` run is noted by every attachment following the log; its success, heard
   * with no review open and no `plan/mode` append of the attachment's own in flight, is taken as
   * attach would take it: P becomes the selection where it differs from F, or P goes when the
   * selection is F.
   */
  private hearCommand(m: AgentModel, type: string, data: unknown): void {
    const d = (typeof data === 'object' && data !== null ? data : {}) as Record<string, unknown>
    const id = String(d.commandId)
    for (const a of [m.attachment, m.closing]) {
      if (!a) continue
      if (type === 'command/run') {
        if (d.name === 'plan' && typeof d.args === 'string') a.heardRuns.set(id, d.args.trim().toLowerCase() !== 'off')
        continue
      }
      if (!a.heardRuns.has(id)) continue
      const selected = a.heardRuns.get(id)!
      a.heardRuns.delete(id)
      if (d.kind !== 'success') continue
      if (a.modeAppends > 0) a.deferredHeard = selected // waits for the append in flight
      else this.takeHeard(a, selected)
    }
  }

  /** R86: a heard `/plan` success, with no review open: P becomes it where it differs from F, or P goes. */
  private takeHeard(a: Attachment, selected: boolean): void {
    const reviewOpen = a.review !== null || a.durable.open !== null || a.durable.requesting || a.durable.inFlight !== null
    if (reviewOpen) return
    if (a.P === undefined) {
      if (selected !== this.F(a)) a.P = selected
    } else if (selected !== a.P) {
      a.P = selected === this.F(a) ? undefined : selected
    }
  }

  /**
   * R80: the first closing record of the open review closes it with its outcome: R47's consent
   * for an approval (K inactive only when told in the result, R81), and the outcome to tell (R81).
   * A record of another id changes nothing.
   */
  private applyClosing(a: Attachment, record: Record<string, unknown>, after: { planMode?: true; header?: true } = {}): void {
    if (a.durable.open?.reviewId !== record.reviewId) return
    a.durable.open = null
    a.durable.closed = { reviewId: record.reviewId as string, outcome: String(record.outcome) }
    // R81: a request header after the record: a step told the outcome, and K is F's there (R30).
    a.durable.news = after.header ? null : newsOfRecord(record)
    if (!leaves(record.outcome)) return // R101: a leave applies R47's state change too
    if (record.toldInResult === true && !after.header) a.K = false
    // R16, R58: a plan/mode after the record resolved the consent's selection.
    if (!after.planMode) a.P = this.F(a) ? false : undefined
  }

  /** Our own record of the open review settled: the first record the log held of it applies now. */
  private settleOwnRecord(a: Attachment): Record<string, unknown> | null {
    const first = a.durable.inFlight?.first ?? null
    const after = a.durable.inFlight?.after
    a.durable.inFlight = null
    if (first) this.applyClosing(a, first, after)
    return first
  }

  /** An append by the service, decided by the fate policy. `then(null)` once it landed and resolved. */
  private append(a: Attachment, type: string, data: unknown, then: (error: Error | null) => void): void {
    const fate = this.appendFate(a.agentId, type, data)
    const m = this.model(a.agentId)
    m.inflight++
    const mode = type === 'plan/mode'
    if (mode) a.modeAppends++
    const after = (error: Error | null) => {
      m.inflight--
      if (mode) a.modeAppends--
      then(error)
      // R86: a /plan heard while this append was in flight is taken now that it settled.
      if (mode && a.modeAppends === 0 && a.deferredHeard !== undefined) {
        const selected = a.deferredHeard
        a.deferredHeard = undefined
        this.takeHeard(a, selected)
      }
      this.maybeFinish(m)
    }
    if (fate.kind === 'ok') {
      this.land(a.agentId, type, data)
      after(null)
    } else if (fate.kind === 'fail') {
      after(fate.error)
    } else {
      const handle = this.nextHandle++
      this.held.set(handle, { handle, agentId: a.agentId, type, data, published: false, settled: false, abandoned: false, mayRepeat: false, owner: a, then: after })
    }
  }

  /**
   * Serialization (§1): an operation starts after the previous one finished. `run` receives
   * `done(settleCall)`: the call settles when the operation finishes, i.e. once no append of the
   * attachment is in flight. `refused(message)` fails the call without running it (R60: its turn
   * came after dispose) or once it runs, when a close abandons its work (R73).
   */
  private enqueue(
    target: string | Attachment,
    run: (a: Attachment, done: (settleCall: () => void) => void) => void,
    refused: (message: string) => void = () => {},
    ahead = false,
  ): void {
    const m = this.model(typeof target === 'string' ? target : target.agentId)
    const start = (): void => {
      let settleCall: (() => void) | null = null
      // The attachment current when the turn comes (a review's settlement keeps its own).
      let a: Attachment
      if (typeof target !== 'string') a = target
      else if (this.disposed) return refused(TEXT.disposedBeforeTurn) // R60: a turn that comes after dispose
      else if (m.abandoned !== null) return this.awaitAbandoned(m, start) // R73
      else a = this.turnAttachment(m)
      const running = {
        done: false,
        finish: () => settleCall?.(),
        abandon: refused,
        attachment: a,
      }
      m.running = running
      run(a, (s) => {
        settleCall = s
        running.done = true
        this.maybeFinish(m)
      })
    }
    if (ahead) m.queue.unshift(start)
    else m.queue.push(start)
    this.maybeFinish(m)
  }

  /**
   * R73: the operation whose turn came waits for the appends a close abandoned to settle, holding
   * the agent's turn; then (or when the wait gives up, or at dispose) its turn starts again.
   */
  private awaitAbandoned(m: AgentModel, start: () => void): void {
    const wait = m.abandoned!
    m.abandoned = null
    m.waiting = wait
    m.running = { done: false, finish: () => {}, abandon: () => {}, attachment: null }
    wait.resume = () => {
      wait.resume = null
      m.waiting = null
      m.running = null
      if (this.draining.has(m)) return void m.queue.unshift(start)
      start()
      this.maybeFinish(m)
    }
  }

  /** Whether a detached attachment has finished its work in flight (then it is gone). */
  private closingIsDone(m: AgentModel): boolean {
    const a = m.closing
    if (!a) return true
    return a.review === null && m.inflight === 0 && m.running?.attachment !== a
  }

  /** The attachment that answers reads: a detached one until its work is done (see the file comment). */
  private readAttachment(agentId: string): Attachment {
    if (this.disposed) throw new Error(TEXT.disposed)
    const m = this.model(agentId)
    if (!m.attachment && m.closing && !this.closingIsDone(m)) return m.closing
    m.closing = null
    return this.attach(agentId)
  }

  /** The attachment an operation runs on when its turn comes: the detached one's work is done by then. */
  private turnAttachment(m: AgentModel): Attachment {
    if (!this.closingIsDone(m)) throw new Error('oracle: an operation started before the detached attachment finished')
    m.closing = null
    return this.attach(m.id)
  }

  private maybeFinish(a: AgentModel): void {
    if (this.draining.has(a)) return // the outer loop goes on
    this.draining.add(a)
    try {
      for (;;) {
        // The running operation ends with its own work (its append, its review's record)...
        if (a.running) {
          if (!a.running.done) return
          const running = a.running
          a.running = null
          running.finish()
          continue
        }
        // ...and the next starts once no append is in flight at all (a review's record too).
        if (a.inflight !== 0) return
        const next = a.queue.shift()
        if (!next) return
        next()
      }
    } finally {
      this.draining.delete(a)
    }
  }

  /** R8–R10, R13, R48: a user selection. */
  private select(a: Attachment, x: boolean, ok: (outcome: SetOutcome) => void, failed: (error: Error) => void): void {
    if (x === this.effective(a)) return ok('noop') // R8
    const review = a.review
    if (review && review.phase !== 'recording') {
      // R48: the review closes first; the selection follows R8–R10 once its record landed.
      this.close(a, { outcome: 'superseded', error: TEXT.superseded }, () => this.follow(a, x, ok, failed))
      return
    }
    const open = a.durable.open
    if (open && !a.durable.inFlight) {
      // R80: a durable review is closed as superseded, then the selection follows R8–R10. A
      // record that fails is contained (R49): the review closes all the same.
      const data = { outcome: 'superseded', reviewId: open.reviewId, title: open.title, plan: open.plan }
      a.durable.inFlight = { reviewId: open.reviewId, own: data, first: null }
      this.append(a, 'plan/review', data, (error) => {
        const first = this.settleOwnRecord(a)
        if (error) {
          this.warnings.push({ message: TEXT.recordFailed, error })
          if (!first) this.applyClosing(a, data)
        }
        this.follow(a, x, ok, failed)
      })
      return
    }
    this.follow(a, x, ok, failed)
  }

  private follow(a: Attachment, x: boolean, ok: (outcome: SetOutcome) => void, failed: (error: Error) => void): void {
    if (x === this.effective(a)) return ok('noop') // R8, evaluated when the selection's turn comes
    const F = this.F(a)
    if (x === F) {
      a.P = undefined
      return ok('cancelled') // R9, R10
    }
    if (this.openTurn(a)) {
      a.P = x
      return ok('queued') // R9
    }
    this.append(a, 'plan/mode', { active: x }, (error) => {
      if (error) return failed(error) // R11: P and F unchanged
      a.P = undefined
      ok('committed') // R10
    })
  }

  /** R15–R20, R30, R32, R35, R36. */
  private stepBoundary(a: Attachment, aborted: boolean, done: (result: BoundaryExpectation) => void): void {
    const under = (active: boolean) => (active ? this.section : '')
    if (aborted) return done({ section: under(this.F(a)), notices: [] }) // R15
    const narrate = () => {
      const S = this.F(a)
      // R81: a durable review's untold outcome goes first, once; an approval is not told under an
      // active state in force (R32 alone applies), and when told it says the mode already.
      // R81, R101: an approval or a leave is not told under an active state in force (plan mode entered again).
      const untoldUnderActive = a.durable.news?.outcome === 'approved' || a.durable.news?.outcome === 'left'
      const news = untoldUnderActive && S ? null : a.durable.news
      a.durable.news = null
      const notices = news ? [newsMessage(news)] : []
      // R81: no leaving notice after an approval's message; R101: nor after a leave's (told under
      // an active state in force, a leave is followed by R32's entering notice, if any).
      const saysMode = news?.outcome === 'approved' || (news?.outcome === 'left' && !S)
      if (a.K !== undefined && a.K !== S && !saysMode) notices.push(S ? TEXT.entering : TEXT.leaving)
      a.K = S
      done({ section: under(S), notices })
    }
    const P = a.P
    if (P === undefined) return narrate()
    if (P === this.F(a)) {
      a.P = undefined // R16: net zero
      return narrate()
    }
    this.append(a, 'plan/mode', { active: P }, (error) => {
      if (error) {
        // R19: contained; P kept; no notice; K unchanged; the step runs as logged (R18). P's
        // target never equals F (R16, R3): when the log reached it while the flush was in flight
        // (an append a close abandoned landed, R73), P goes.
        this.warnings.push({ message: TEXT.flushFailed, error })
        if (a.P === this.F(a)) a.P = undefined
        if (a.durable.news !== null) a.durable.keptPastHeader = true // R81: its header tells nothing
        return done({ section: under(this.F(a)), notices: [] })
      }
      a.P = undefined
      narrate()
    })
  }

  private reviewOf(ask: ExpectedAsk): Attachment | null {
    if (ask.stale) return null
    const a = this.model(ask.agentId).attachment
    if (!a || !a.review || a.review.ask !== ask || a.review.phase !== 'asking') return null
    return a
  }

  /**
   * The user answered (or the channel failed): the record waits for the append in flight, then
   * goes ahead of the operations still waiting for their turn (§1, docs/spec.md).
   */
  private answered(a: Attachment, settlement: Settlement): void {
    const review = a.review!
    review.phase = 'answered'
    review.settlement = settlement
    review.ask!.stale = true
    this.enqueue(a, (_, done) => {
      // A selection or reload may have closed the review meanwhile (R48, R60).
      if (a.review !== review || review.phase !== 'answered') return done(() => {})
      review.phase = 'recording'
      this.record(a, review, () => done(() => {}))
    }, undefined, true)
  }

  /** Closes the review without an answer: aborted, superseded or reloaded (R46, R48, R60, R63). */
  private close(a: Attachment, settlement: Settlement, after?: () => void): void {
    const review = a.review!
    // R43: the service's signal aborts while the user is still being asked (once answered, it no longer matters).
    if (review.ask && review.phase === 'asking') review.ask.aborted = true
    if (review.ask) review.ask.stale = true
    review.phase = 'recording'
    review.settlement = settlement
    this.record(a, review, after)
  }

  /** R49: the record lands (or its failure is contained), then the call settles (R47). */
  private record(a: Attachment, review: Review, after?: () => void): void {
    const s = review.settlement!
    // R94: a policy's decision ends with `by: 'policy'`; a user's record has no `by` key. R101:
    // a fresh approval's `fresh: true` comes after the rest, before `by`.
    const data = {
      outcome: s.outcome,
      title: review.title,
      plan: review.plan,
      ...(s.feedback !== undefined ? { feedback: s.feedback } : {}),
      ...(s.fresh === true ? { fresh: true } : {}),
      ...(s.by === 'policy' ? { by: 'policy' } : {}),
    }
    this.append(a, 'plan/review', data, (error) => {
      if (error) this.warnings.push({ message: TEXT.recordFailed, error })
      a.review = null
      if (leaves(s.outcome)) {
        // R47: K := inactive; if F is active, P := leaving, else P removed. R101: a leave too,
        // without consent: the call fails with its text.
        a.K = false
        if (error) a.toldIsLogged = false
        a.P = this.F(a) ? false : undefined
        if (s.outcome === 'approved') this.settle(review.call, { approved: true })
        else this.fail(review.call, s.error!)
      } else {
        this.fail(review.call, s.error!)
      }
      after?.()
    })
  }
}

/** R43: the one question a review must ask, quoted from SPEC; R101: its four options with `decisions: 'all'`. */
export function expectedQuestion(plan: string, decisions: Decisions = 'approve-or-keep') {
  const approve = { label: 'Approve', description: 'Leave plan mode; the plan is carried out from the next step.' }
  const keep = { label: 'Keep planning', description: 'Stay in plan mode; feedback goes back to the model.' }
  return {
    id: 'plan-review',
    header: 'Plan review',
    question: 'Approve this plan and leave plan mode?',
    detail: plan,
    // R101: R43's two first, then the two it adds.
    options:
      decisions === 'all'
        ? [
            approve,
            keep,
            {
              label: 'Approve in a fresh context',
              description: 'Leave plan mode; the plan is carried out from the next step, in a fresh context that holds the plan and the decisions made.',
            },
            { label: 'Leave plan mode', description: 'Leave plan mode without carrying out the plan; the model stops and waits.' },
          ]
        : [approve, keep],
    intent: { kind: 'plan-review', approve: 'Approve' },
  }
}
