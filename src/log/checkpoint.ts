import type { SessionEvent, SessionLog } from './session.js'
import { eventDigest } from './digest.js'
import { EMPTY_REVIEW_FOLD, TURN_END_EVENT, isReviewOutcome, latestApprovedPlan, replayPlanLog, replayPlanLogFrom, requestFollows, restorePlanLog, type ApprovedPlan, type OpenPresentation, type PlanDecision, type PlanEpisode, type PlanLogFold, type PlanLogRestore, type PlanProjectionState, type ReviewFold } from './kinds.js'

/**
 * Checkpoints (docs/spec.md R76): what attach needs of a log up to one seq, so that a host loads
 * and the service replays only the events after it. A checkpoint is the log's fold (the same one
 * `replayPlanLog` computes: the projection, the open turn, K) rather than XState's persisted
 * snapshot: the fold is what attach restores the chart from (R64), it never holds work in flight
 * or ports, and it stays valid when the chart's internal states are renamed. What it holds is
 * versioned, and bound to the agent it was saved for and to the event it ends at (a digest of
 * it): a checkpoint of another version, of another agent, or one that does not match the log, is
 * ignored and the log replayed in full: the log stays the truth.
 */

/** The checkpoint format this version writes and reads; changed whenever the fold changes. */
export const PLAN_CHECKPOINT_VERSION = 'xstate-plan-mode/checkpoint@3'

/** What attach needs of a log up to and including `seq` (R76). JSON data. */
export interface PlanCheckpoint {
  readonly version: string
  /** The agent it was saved for (`save(agent.id, checkpoint)`): attach refuses it for any other. */
  readonly agentId: string
  /** The seq of the last event the checkpoint covers. */
  readonly seq: number
  /** The type of that event. */
  readonly type: string
  /**
   * The digest of that event, its seq, type and data (`eventDigest`): attach checks the
   * checkpoint against the log's event at `seq`, which the loaded events must hold.
   */
  readonly digest: string
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
 * The checkpoint of agent `agentId` of `fold`, the fold of a log up to and including the last of
 * `events` (which hold at least the events since the fold's own base), bound to that agent and
 * to that event, or null where none is made (R76, R102):
 * while a handoff is due, or while the durable review open was presented before the current
 * episode began. A handoff reads the approved plan's version and the decisions made on its
 * episode from the events before the approval, which the checkpoint would cut off; the next
 * checkpoint due is made instead.
 */
export function createCheckpoint(agentId: string, fold: PlanLogFold, events: readonly SessionEvent[]): PlanCheckpoint | null {
  const last = events.at(-1)
  if (last === undefined) return null
  const open = fold.review.open
  if (open !== null && !fold.episode?.open?.some((presented) => presented.reviewId === open.reviewId)) return null
  // A handoff due since an approval before these events was told before the checkpoint they follow.
  const { approved } = fold
  if (approved?.fresh === true && approved.seq >= events[0]!.seq && !requestFollows(events, approved.seq)) return null
  const binding = { version: PLAN_CHECKPOINT_VERSION, agentId, seq: last.seq, type: last.type, digest: eventDigest(last) }
  const checkpoint = { ...binding, projection: fold.projection, openTurn: fold.openTurn, told: fold.told, review: fold.review }
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

/** What `eventDigest` gives. */
const DIGEST = /^fnv1a64:[0-9a-f]{16}$/

/**
 * Reads an untrusted checkpoint: a checked copy, or why it cannot be used (R76). With `agentId`,
 * a checkpoint saved for another agent cannot be used either. Never throws: a getter that throws
 * is a reason too. (Whether it ends at the log's event is `checkpointEventProblem`'s question.)
 */
export function readCheckpoint(value: unknown, agentId?: string): PlanCheckpoint | { problem: string } {
  try {
    const checkpoint = value as Partial<PlanCheckpoint> | null
    if (typeof checkpoint !== 'object' || checkpoint === null) return { problem: 'the checkpoint is not an object' }
    if (checkpoint.version !== PLAN_CHECKPOINT_VERSION) {
      return { problem: `the checkpoint's version is ${JSON.stringify(checkpoint.version)}, not ${JSON.stringify(PLAN_CHECKPOINT_VERSION)}` }
    }
    const { agentId: owner, seq, type, digest, projection, openTurn, told } = checkpoint
    const approved = readApprovedPlan(checkpoint.approved)
    const episode = readEpisode(checkpoint.episode)
    const review = readReviewFold(checkpoint.review)
    if (typeof seq !== 'number' || !Number.isSafeInteger(seq) || seq < 1 || typeof type !== 'string') {
      return { problem: 'the checkpoint names no event (seq, type)' }
    }
    if (typeof owner !== 'string' || typeof digest !== 'string' || !DIGEST.test(digest)) {
      return { problem: 'the checkpoint is bound to no agent and event (agentId, digest)' }
    }
    if (agentId !== undefined && owner !== agentId) return { problem: `the checkpoint is of agent ${JSON.stringify(owner)}, not ${JSON.stringify(agentId)}` }
    if (!isProjection(projection) || typeof openTurn !== 'boolean' || !isBooleanOrNull(told) || review === undefined || approved === false || episode === false) {
      return { problem: 'the checkpoint holds no valid fold (projection, openTurn, told, review, approved, episode)' }
    }
    // A copy of its own: the host's object may change after it was read.
    const runs = Object.freeze({ ...projection.runs })
    return Object.freeze({
      version: PLAN_CHECKPOINT_VERSION,
      agentId: owner,
      seq,
      type,
      digest,
      // The open durable review is the review fold's (R79): a checkpoint written before the
      // projection kept it reads the same.
      projection: Object.freeze(
        review.open === null
          ? { active: projection.active, runs, kept: projection.kept }
          : { active: projection.active, runs, kept: projection.kept, openReview: review.open.reviewId },
      ),
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
 * Why `event`, the log's event at the checkpoint's seq, is not the event the checkpoint ends at
 * (R76): missing, of another seq or type, or with another digest; undefined when it is. Never
 * throws: an event whose data cannot be read is a reason too. A loader that has the event checks
 * with it before it hands the checkpoint over.
 */
export function checkpointEventProblem(checkpoint: PlanCheckpoint, event: SessionEvent | undefined): string | undefined {
  const { seq, type, digest } = checkpoint
  if (event === undefined) return `the log does not hold the event the checkpoint ends at (seq ${seq}), which a loader must load with the events after it`
  if (event.seq !== seq || event.type !== type) return `the checkpoint covers seq ${seq} (${type}), but the log holds ${event.type} at seq ${event.seq}`
  let actual: string
  try {
    actual = eventDigest(event)
  } catch (error) {
    return `the log's ${type} at seq ${seq} cannot be read: ${error instanceof Error ? error.message : String(error)}`
  }
  return actual === digest ? undefined : `the checkpoint ends at another event than the log's ${type} at seq ${seq} (digest ${digest}, the log's ${actual})`
}

/** The index of the first of `events` after seq `seq`, found from the end (a host may hold the whole log). */
function indexAfter(events: readonly SessionEvent[], seq: number): number {
  let from = events.length
  while (from > 0 && events[from - 1]!.seq > seq) from--
  return from
}

/**
 * The fold of a log that holds the event a checked checkpoint ends at and every event after it,
 * and possibly some before (R76), or the problem that makes the checkpoint unusable for these
 * events: events that jump past the checkpoint, or one at its seq that is not its event.
 * @throws on an invalid `plan/mode` after the checkpoint (R61).
 */
export function replayFromCheckpoint(events: readonly SessionEvent[], checkpoint: PlanCheckpoint): PlanLogFold | { problem: string } {
  const { seq } = checkpoint
  const from = indexAfter(events, seq)
  const first = events[from]
  if (first !== undefined && first.seq !== seq + 1) {
    return { problem: `the log's events jump from the checkpoint's seq ${seq} to seq ${first.seq}` }
  }
  const problem = checkpointEventProblem(checkpoint, events[from - 1])
  if (problem !== undefined) return { problem }
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
 * What attach rebuilds from agent `agentId`'s session (R64, R76): from its checkpoint and the
 * events after it when it carries a usable one (the agent's, ending at the log's event at its
 * seq); else from its whole log (warning when a checkpoint was ignored).
 * @throws when a session that holds only a tail carries an unusable checkpoint (nothing to
 *   replay in full), and on an invalid `plan/mode` (R61).
 */
export function restoreSession(session: SessionLog, agentId: string, warn: (message: string, error: unknown) => void): SessionRestore {
  const { events } = session
  let checkpoint: unknown
  try {
    checkpoint = session.checkpoint
  } catch (error) {
    checkpoint = { problem: error }
  }
  if (checkpoint === undefined || checkpoint === null) return { restore: restorePlanLog(events), base: null }
  const read = readCheckpoint(checkpoint, agentId)
  const fold = 'problem' in read ? read : replayFromCheckpoint(events, read)
  if (!('problem' in fold)) return { restore: restoreOf(fold), base: 'problem' in read ? null : read }
  // An empty log is a whole one (a loader loads at least the checkpoint's own event).
  const first = events[0]
  if (first !== undefined && first.seq !== 1) {
    throw new Error(
      `plan-mode: the session log holds no event from seq 1 and its checkpoint cannot be used (${fold.problem}); load the whole log`,
    )
  }
  warn(CHECKPOINT_IGNORED_WARNING, new Error(fold.problem))
  return { restore: restorePlanLog(events), base: null }
}

/**
 * The plan approved last in agent `agentId`'s session (R98), read from its events backwards to
 * the last approval or entry into plan mode; when the events start with a checkpoint (R76) and
 * those after it hold neither, the checkpoint's. Never throws: a checkpoint that cannot be used
 * knows no plan.
 */
export function approvedPlanOf(session: SessionLog, agentId: string): ApprovedPlan | null {
  const { events } = session
  const start = checkpointStart(session, agentId)
  const latest = latestApprovedPlan(events, start?.checkpoint.review, start?.from)
  return latest !== undefined ? latest : (start?.checkpoint.approved ?? null)
}

/**
 * Where the readers of a session's events begin (R76): after its checkpoint, checked as attach
 * checks it (with `agentId`, also that it is that agent's), when its events do not start at seq 1;
 * `from` is the index of the first event after it. Null when the session holds its whole log (its
 * readers read it all) or its checkpoint cannot be used.
 */
export function checkpointStart(session: SessionLog, agentId?: string): { checkpoint: PlanCheckpoint; from: number } | null {
  const { events } = session
  if (events[0]?.seq === 1) return null
  let checkpoint: unknown
  try {
    checkpoint = session.checkpoint
  } catch {
    return null
  }
  if (checkpoint === undefined || checkpoint === null) return null
  const read = readCheckpoint(checkpoint, agentId)
  if ('problem' in read) return null
  const from = indexAfter(events, read.seq)
  return checkpointEventProblem(read, events[from - 1]) === undefined ? { checkpoint: read, from } : null
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
   * the checkpoint, bound to agent `agentId`. The next one folds from here even when this save
   * fails: the fold is right either way.
   * @throws (rejects) what the store or the fold throws; the caller reports it.
   */
  async write(agentId: string, events: readonly SessionEvent[], due: SessionEvent): Promise<void> {
    let end = events.length
    while (end > 0 && events[end - 1]!.seq > due.seq) end--
    const upTo = end === events.length ? events : events.slice(0, end)
    const fold = this.#base === null ? replayPlanLog(upTo) : replayFromCheckpoint(upTo, this.#base)
    if ('problem' in fold) throw new Error(fold.problem)
    const checkpoint = createCheckpoint(agentId, fold, upTo)
    if (checkpoint === null) return // none is made here (a review open, a handoff due): the next due one
    this.#base = checkpoint
    await this.store.save(agentId, checkpoint)
  }
}
