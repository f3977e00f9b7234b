import type { SessionEvent, SessionLog } from '../types.js'
import { EMPTY_REVIEW_FOLD, TURN_END_EVENT, isReviewOutcome, latestApprovedPlan, replayPlanLog, replayPlanLogFrom, requestFollows, restorePlanLog, type ApprovedPlan, type OpenPresentation, type PlanDecision, type PlanEpisode, type PlanLogFold, type PlanLogRestore, type PlanProjectionState, type ReviewFold } from './kinds.js'

/**
 * Checkpoints (docs/spec.md R76): what attach needs of a log up to one seq, so that a host loads
 * and the service replays only the events after it. A checkpoint is the log's fold (the same one
 * `replayPlanLog` computes: the projection, the open turn, K) rather than XState's persisted
 * snapshot: the fold is what attach restores the chart from (R64), it never holds work in flight
 * or ports, and it stays valid when the chart's internal states are renamed. What it holds is
 * versioned; a checkpoint of another version, or one that does not match the log, is ignored and
 * the log replayed in full: the log stays the truth.
 */

/** The checkpoint format this version writes and reads; changed whenever the fold changes. */
export const PLAN_CHECKPOINT_VERSION = 'xstate-plan-mode/checkpoint@3'

/** What attach needs of a log up to and including `seq` (R76). JSON data. */
export interface PlanCheckpoint {
  readonly version: string
  /** The seq of the last event the checkpoint covers. */
  readonly seq: number
  /** The type of that event: a checkpoint is checked against the log where the log still holds it. */
  readonly type: string
  /** The projection's state (R58): F, unsettled `/plan` runs, the kept selection. */
  readonly projection: PlanProjectionState
  /** Whether a turn is open (R5). */
  readonly openTurn: boolean
  /** K, what the model was last told (R31). */
  readonly told: boolean | null
  /** Durable reviews: the open one, the last closed one, the outcome not told yet (R79–R81). */
  readonly review: ReviewFold
  /**
   * The approved plan (R98), when there is one. Optional: a checkpoint written before it was
   * kept still attaches, knowing no approved plan.
   */
  readonly approved?: ApprovedPlan
  /**
   * The last plan of the current planning episode and its version, with the decisions made on its
   * versions and its durable presentations still open (R96, R102), when there is one; optional as
   * `approved` is.
   */
  readonly episode?: PlanEpisode
}

/**
 * Where checkpoints are kept, one per agent; the service saves, the host's loader loads (R76).
 * A failing `save` is contained (R62); whatever `load` returns is checked before it is believed.
 */
export interface CheckpointStore {
  /** The agent's latest checkpoint, or `undefined` when there is none. */
  load(agentId: string): unknown | Promise<unknown>
  /** Replaces the agent's checkpoint. */
  save(agentId: string, checkpoint: PlanCheckpoint): void | Promise<void>
}

/**
 * The checkpoint of `fold`, the fold of a log up to and including the last of `events` (which
 * hold at least the events since the fold's own base), or null where none is made (R76, R102):
 * while a handoff is due, or while the durable review open was presented before the current
 * episode began. A handoff reads the approved plan's version and the decisions made on its
 * episode from the events before the approval, which the checkpoint would cut off; the next
 * checkpoint due is made instead.
 */
export function createCheckpoint(fold: PlanLogFold, events: readonly SessionEvent[]): PlanCheckpoint | null {
  const last = events.at(-1)
  if (last === undefined) return null
  const open = fold.review.open
  if (open !== null && !fold.episode?.open?.some((presented) => presented.reviewId === open.reviewId)) return null
  // A handoff due since an approval before these events was told before the checkpoint they follow.
  const { approved } = fold
  if (approved?.fresh === true && approved.seq >= events[0]!.seq && !requestFollows(events, approved.seq)) return null
  const checkpoint = { version: PLAN_CHECKPOINT_VERSION, seq: last.seq, type: last.type, projection: fold.projection, openTurn: fold.openTurn, told: fold.told, review: fold.review }
  return { ...checkpoint, ...(approved === null ? {} : { approved }), ...(fold.episode === null ? {} : { episode: fold.episode }) }
}

const isBooleanOrNull = (value: unknown): value is boolean | null => value === null || typeof value === 'boolean'

function isProjection(value: unknown): value is PlanProjectionState {
  const projection = value as PlanProjectionState | null
  if (typeof projection !== 'object' || projection === null) return false
  if (typeof projection.active !== 'boolean' || !isBooleanOrNull(projection.kept)) return false
  const runs = projection.runs as unknown
  if (typeof runs !== 'object' || runs === null || Array.isArray(runs)) return false
  return Object.values(runs).every((selects) => typeof selects === 'boolean')
}

const isString = (value: unknown): value is string => typeof value === 'string'

/** A checked copy of a checkpoint's review fold, or undefined when it is not one (R76, R79). */
function readReviewFold(value: unknown): ReviewFold | undefined {
  const fold = value as ReviewFold | null
  if (typeof fold !== 'object' || fold === null) return undefined
  const { open, closed, news } = fold
  if (open !== null && !(typeof open === 'object' && isString(open?.reviewId) && isString(open.title) && isString(open.plan) && Number.isSafeInteger(open.version) && (open.callId === undefined || isString(open.callId)))) return undefined
  if (closed !== null && !(typeof closed === 'object' && isString(closed?.reviewId) && isReviewOutcome(closed.outcome))) return undefined
  if (news !== null && !(typeof news === 'object' && ['approved', 'left', 'keep-planning', 'superseded'].includes(news?.outcome as string) && (news.feedback === undefined || isString(news.feedback)))) return undefined
  if (open === null && closed === null && news === null) return EMPTY_REVIEW_FOLD
  return Object.freeze({
    open: open && Object.freeze({ reviewId: open.reviewId, title: open.title, plan: open.plan, version: open.version, ...(open.callId === undefined ? {} : { callId: open.callId }) }),
    closed: closed && Object.freeze({ reviewId: closed.reviewId, outcome: closed.outcome }),
    news: news && Object.freeze({ outcome: news.outcome, ...(news.feedback === undefined ? {} : { feedback: news.feedback }) }),
  })
}

/** A checked copy of a checkpoint's approved plan: null when absent, false when it is not one (R98). */
function readApprovedPlan(value: unknown): ApprovedPlan | null | false {
  if (value === undefined) return null
  const approved = value as ApprovedPlan | null
  if (typeof approved !== 'object' || approved === null || !isString(approved.title) || !isString(approved.plan) || !Number.isSafeInteger(approved.seq)) return false
  const { title, plan, seq } = approved
  // Every field a reader reads: `by` (R94) and `fresh` (R101: the host hands the plan off, R102).
  return Object.freeze({ title, plan, seq, ...(approved.by === 'policy' ? { by: 'policy' as const } : {}), ...(approved.fresh === true ? { fresh: true as const } : {}) })
}

/** A checked copy of a checkpoint's episode: null when absent, false when it is not one (R96). */
function readEpisode(value: unknown): PlanEpisode | null | false {
  if (value === undefined) return null
  const episode = value as PlanEpisode | null
  if (typeof episode !== 'object' || episode === null || !Number.isSafeInteger(episode.version) || episode.version < 1 || !isString(episode.plan)) return false
  const decisions = readDecisions(episode.decisions, episode.version)
  const open = readOpenPresentations(episode.open, episode.version)
  if (decisions === false || open === false) return false
  return Object.freeze({ version: episode.version, plan: episode.plan, ...(decisions === null ? {} : { decisions }), ...(open === null ? {} : { open }) })
}

/** A checked copy of an episode's open presentations (R96): null when absent, false when they are not its versions' reviews. */
function readOpenPresentations(value: unknown, upTo: number): readonly OpenPresentation[] | null | false {
  if (value === undefined) return null
  if (!Array.isArray(value) || value.length === 0) return false
  const open: OpenPresentation[] = []
  for (const presented of value as unknown[]) {
    const { reviewId, version } = (presented ?? {}) as Partial<OpenPresentation>
    if (!isString(reviewId) || typeof version !== 'number' || !Number.isSafeInteger(version) || version < 1 || version > upTo) return false
    if (open.some((other) => other.reviewId === reviewId)) return false
    open.push(Object.freeze({ reviewId, version }))
  }
  return Object.freeze(open)
}

/** A checked copy of an episode's decisions (R102): null when absent, false when they are not decisions on its versions. */
function readDecisions(value: unknown, upTo: number): readonly PlanDecision[] | null | false {
  if (value === undefined) return null
  if (!Array.isArray(value) || value.length === 0) return false
  const decisions: PlanDecision[] = []
  for (const decision of value as unknown[]) {
    const { version, feedback } = (decision ?? {}) as Partial<PlanDecision>
    if (typeof version !== 'number' || !Number.isSafeInteger(version) || version < 1 || version > upTo || !isString(feedback)) return false
    decisions.push(Object.freeze({ version, feedback }))
  }
  return Object.freeze(decisions)
}

/**
 * Reads an untrusted checkpoint: a checked copy, or why it cannot be used (R76). Never throws: a
 * getter that throws is a reason too.
 */
export function readCheckpoint(value: unknown): PlanCheckpoint | { problem: string } {
  try {
    const checkpoint = value as Partial<PlanCheckpoint> | null
    if (typeof checkpoint !== 'object' || checkpoint === null) return { problem: 'the checkpoint is not an object' }
    if (checkpoint.version !== PLAN_CHECKPOINT_VERSION) {
      return { problem: `the checkpoint's version is ${JSON.stringify(checkpoint.version)}, not ${JSON.stringify(PLAN_CHECKPOINT_VERSION)}` }
    }
    const { seq, type, projection, openTurn, told } = checkpoint
    const approved = readApprovedPlan(checkpoint.approved)
    const episode = readEpisode(checkpoint.episode)
    const review = readReviewFold(checkpoint.review)
    if (typeof seq !== 'number' || !Number.isSafeInteger(seq) || seq < 1 || typeof type !== 'string') {
      return { problem: 'the checkpoint names no event (seq, type)' }
    }
    if (!isProjection(projection) || typeof openTurn !== 'boolean' || !isBooleanOrNull(told) || review === undefined || approved === false || episode === false) {
      return { problem: 'the checkpoint holds no valid fold (projection, openTurn, told, review, approved, episode)' }
    }
    // A copy of its own: the host's object may change after it was read.
    const runs = Object.freeze({ ...projection.runs })
    return Object.freeze({
      version: PLAN_CHECKPOINT_VERSION,
      seq,
      type,
      projection: Object.freeze({ active: projection.active, runs, kept: projection.kept }),
      openTurn,
      told,
      review,
      ...(approved === null ? {} : { approved }),
      ...(episode === null ? {} : { episode }),
    })
  } catch (error) {
    return { problem: `the checkpoint cannot be read: ${error instanceof Error ? error.message : String(error)}` }
  }
}

/**
 * The fold of a log that holds the events after a checked checkpoint, and possibly some before
 * it (R76), or the problem that makes the checkpoint unusable for these events.
 * @throws on an invalid `plan/mode` after the checkpoint (R61).
 */
export function replayFromCheckpoint(events: readonly SessionEvent[], checkpoint: PlanCheckpoint): PlanLogFold | { problem: string } {
  const { seq, type } = checkpoint
  // The first event after the checkpoint, found from the end (a host may hold the whole log).
  let from = events.length
  while (from > 0 && events[from - 1]!.seq > seq) from--
  const first = events[from]
  if (first !== undefined && first.seq !== seq + 1) {
    return { problem: `the log's events jump from the checkpoint's seq ${seq} to seq ${first.seq}` }
  }
  const covered = events[from - 1]
  if (covered !== undefined && (covered.seq !== seq || covered.type !== type)) {
    return { problem: `the checkpoint covers seq ${seq} (${type}), but the log holds ${covered.type} at seq ${covered.seq}` }
  }
  const base: PlanLogFold = {
    projection: checkpoint.projection,
    openTurn: checkpoint.openTurn,
    told: checkpoint.told,
    review: checkpoint.review,
    approved: checkpoint.approved ?? null,
    episode: checkpoint.episode ?? null,
    lastSeq: seq,
  }
  return replayPlanLogFrom(events, base, from)
}

/** Reported when a checkpoint is ignored and the log replayed in full (R76). */
export const CHECKPOINT_IGNORED_WARNING = 'plan-mode: checkpoint ignored; the log is replayed in full'
/** Reported when a checkpoint cannot be saved (R62, R76). */
export const CHECKPOINT_WRITE_WARNING = 'plan-mode: checkpoint write failed'

/** What attach rebuilds, and the checkpoint a later one builds on (null: none known yet). */
export interface SessionRestore {
  readonly restore: PlanLogRestore
  readonly base: PlanCheckpoint | null
}

/**
 * What attach rebuilds from a session (R64, R76): from its checkpoint and the events after it
 * when it carries a usable one; else from its whole log (warning when a checkpoint was ignored).
 * @throws when a session that holds only a tail carries an unusable checkpoint (nothing to
 *   replay in full), and on an invalid `plan/mode` (R61).
 */
export function restoreSession(session: SessionLog, warn: (message: string, error: unknown) => void): SessionRestore {
  const { events } = session
  let checkpoint: unknown
  try {
    checkpoint = session.checkpoint
  } catch (error) {
    checkpoint = { problem: error }
  }
  if (checkpoint === undefined || checkpoint === null) return { restore: restorePlanLog(events), base: null }
  const read = readCheckpoint(checkpoint)
  const fold = 'problem' in read ? read : replayFromCheckpoint(events, read)
  if (!('problem' in fold)) return { restore: restoreOf(fold), base: 'problem' in read ? null : read }
  const first = events[0]
  if (first === undefined || first.seq !== 1) {
    throw new Error(
      `plan-mode: the session log holds no event from seq 1 and its checkpoint cannot be used (${fold.problem}); load the whole log`,
    )
  }
  warn(CHECKPOINT_IGNORED_WARNING, new Error(fold.problem))
  return { restore: restorePlanLog(events), base: null }
}

/**
 * The plan approved last in a session (R98), read from its events backwards to the last approval
 * or entry into plan mode; when they hold neither and start after a checkpoint (R76), the
 * checkpoint's. Never throws: a checkpoint that cannot be read knows no plan.
 */
export function approvedPlanOf(session: SessionLog): ApprovedPlan | null {
  const { events } = session
  const checkpoint = events[0]?.seq === 1 ? null : loadedCheckpoint(session)
  const latest = latestApprovedPlan(events, checkpoint?.review)
  return latest !== undefined ? latest : (checkpoint?.approved ?? null)
}

/** The session's checkpoint, checked, or null when it has none or one that cannot be used. */
export function loadedCheckpoint(session: SessionLog): PlanCheckpoint | null {
  let checkpoint: unknown
  try {
    checkpoint = session.checkpoint
  } catch {
    return null
  }
  if (checkpoint === undefined || checkpoint === null) return null
  const read = readCheckpoint(checkpoint)
  return 'problem' in read ? null : read
}

/** A fold as attach reads it. */
function restoreOf(fold: PlanLogFold): PlanLogRestore {
  return { active: fold.projection.active, kept: fold.projection.kept, openTurn: fold.openTurn, told: fold.told, review: fold.review, lastSeq: fold.lastSeq }
}

/**
 * Saves an agent's checkpoints (R76): when the agent goes idle (`turn/end`) at least `every`
 * seqs after the last checkpoint (after the log's start when there is none). The fold is built from the last checkpoint and the events
 * after it (the whole log the first time).
 */
export class CheckpointWriter {
  #base: PlanCheckpoint | null
  /** The seq of the last checkpoint made due (written or not yet). */
  #dueSeq: number

  constructor(
    private readonly store: CheckpointStore,
    private readonly every: number,
    base: PlanCheckpoint | null,
  ) {
    this.#base = base
    this.#dueSeq = base?.seq ?? 0
  }

  /** True when a checkpoint is due at this event, which the chart just took; the caller writes it. */
  taken(event: SessionEvent): boolean {
    if (event.type !== TURN_END_EVENT || event.seq - this.#dueSeq < this.every) return false
    this.#dueSeq = event.seq
    return true
  }

  /**
   * Folds the log up to the event `due` (from the last checkpoint, or from the start) and saves
   * the checkpoint. The next one folds from here even when this save fails: the fold is right
   * either way.
   * @throws (rejects) what the store or the fold throws; the caller reports it.
   */
  async write(agentId: string, events: readonly SessionEvent[], due: SessionEvent): Promise<void> {
    let end = events.length
    while (end > 0 && events[end - 1]!.seq > due.seq) end--
    const upTo = end === events.length ? events : events.slice(0, end)
    const fold = this.#base === null ? replayPlanLog(upTo) : replayFromCheckpoint(upTo, this.#base)
    if ('problem' in fold) throw new Error(fold.problem)
    const checkpoint = createCheckpoint(fold, upTo)
    if (checkpoint === null) return // none is made here (a review open, a handoff due): the next due one
    this.#base = checkpoint
    await this.store.save(agentId, checkpoint)
  }
}
