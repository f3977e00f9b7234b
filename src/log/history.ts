import type { SessionEvent, SessionLog } from './session.js'
import { checkpointStart } from './checkpoint.js'
import { PLAN_MODE_EVENT, PLAN_REVIEW_EVENT, episodeAfter, presentsPlan, type PlanEpisode, type ReviewOutcome } from './kinds.js'

/** One plan the model presented (R96), as the log tells it. */
export interface PresentedPlan {
  /** The seq of the record that presented it (a channel review's record, a durable request). */
  seq: number
  /** 1, 2, … within its planning episode (R96). */
  version: number
  title: string
  plan: string
  /** How its review ended, or `'open'` while a durable review waits for its answer. */
  outcome: ReviewOutcome | 'open'
  /** The keep-planning feedback, when there was some. */
  feedback?: string
  /** Set when a headless policy decided the outcome (R94, R95). */
  by?: 'policy'
  /** Set when it was approved into a fresh context (R101). */
  fresh?: true
  /** A durable review's id. */
  reviewId?: string
  /** The plan of the previous version in the same episode, or null for version 1. */
  previous: string | null
}

/**
 * The plan history of one log, read event by event (R96), for readers that follow a log live
 * (the visualizer): `read` takes the next event and returns the plan it presented or settled.
 */
export interface PlanHistoryReader {
  /** Every plan presented so far, in order. */
  readonly plans: readonly PresentedPlan[]
  /** The version the next plan presented gets, and the plan it follows in its episode (null: version 1). */
  next(): { version: number; previous: string | null }
  /** Reads the log's next event: the plan it presents, or whose review it closes; else undefined. */
  read(event: SessionEvent): PresentedPlan | undefined
}

/**
 * A reader of a log's plan history (R96). An episode starts at every `plan/mode` record
 * (entering plan mode starts one; leaving it ends it), and the plans presented in it are versions
 * 1, 2, … Records that are not what the library writes are skipped. `start` is the episode the
 * events begin in, for events that start with a checkpoint's (`episodeBefore(session)`): the
 * events up to its `after` are skipped.
 */
export function createPlanHistory(start: PlanEpisode | null = null): PlanHistoryReader {
  const plans: PresentedPlan[] = []
  /** The durable reviews still open, by id: their first closing record ends them (R80). */
  const open = new Map<string, PresentedPlan>()
  /** The current episode, as the log's one fold reads it (`episodeAfter`): its last plan and version. */
  let episode: PlanEpisode | null = start
  return {
    plans,
    next: () => ({ version: (episode?.version ?? 0) + 1, previous: episode?.plan ?? null }),
    read(event) {
      // The events up to the checkpoint the start was read from are in it already (R76).
      if (start?.after !== undefined && event.seq <= start.after) return undefined
      const data = typeof event.data === 'object' && event.data !== null ? (event.data as Record<string, unknown>) : undefined
      const before = episode
      episode = episodeAfter(episode, event.type, data)
      if (event.type !== PLAN_REVIEW_EVENT || data === undefined) return undefined
      if (!presentsPlan(data)) {
        const presented = typeof data.reviewId === 'string' ? open.get(data.reviewId) : undefined
        if (presented === undefined || typeof data.outcome !== 'string') return undefined
        open.delete(data.reviewId as string)
        settle(presented, data)
        return presented
      }
      const entry: PresentedPlan = {
        seq: event.seq,
        version: episode!.version,
        title: typeof data.title === 'string' ? data.title : '',
        plan: data.plan as string,
        outcome: 'open',
        previous: before?.plan ?? null,
      }
      if (typeof data.reviewId === 'string') {
        entry.reviewId = data.reviewId
        open.set(data.reviewId, entry)
      } else {
        settle(entry, data)
      }
      plans.push(entry)
      return entry
    },
  }
}

/**
 * The episode a session's loaded events begin in (R96): its checkpoint's, when the events start
 * with a checkpoint's event (R76) and it carries one, marked `after` its seq (the readers that
 * begin in it read only the events after that); else null (a whole log begins in none). The
 * checkpoint is checked as attach checks it; give the agent's id to check that it is that agent's.
 */
export function episodeBefore(session: SessionLog, agentId?: string): PlanEpisode | null {
  const start = checkpointStart(session, agentId)
  const episode = start?.checkpoint.episode
  return episode === undefined ? null : { ...episode, after: start!.checkpoint.seq }
}

/**
 * The plans a log presented, in order, numbered within their planning episode (R96): a pure fold
 * that needs no service. `start` as for `createPlanHistory`.
 */
export function planHistory(events: readonly SessionEvent[], start: PlanEpisode | null = null): PresentedPlan[] {
  const history = createPlanHistory(start)
  for (const event of events) history.read(event)
  return history.plans as PresentedPlan[]
}

function settle(entry: PresentedPlan, data: Record<string, unknown>): void {
  entry.outcome = data.outcome as ReviewOutcome
  if (typeof data.feedback === 'string') entry.feedback = data.feedback
  if (data.by === 'policy') entry.by = 'policy'
  if (data.fresh === true) entry.fresh = true
}

/**
 * The version R96 gives the plan of the durable review `reviewId` requested by the record at
 * `seq` (R79, R138), read backward from the log's end to the `plan/mode` that started its
 * episode: the plans presented in the episode up to and including it. When the loaded events
 * begin after a checkpoint inside that episode, the checkpoint's episode numbers on (R96), and a
 * request it holds open has the version it recorded.
 */
export function presentedVersion(session: SessionLog, reviewId: string, seq: number, agentId?: string): number {
  const { events } = session
  let count = 0
  for (let i = events.length - 1; i >= 0; i--) {
    const event = events[i]!
    if (event.seq > seq) continue
    if (event.type === PLAN_MODE_EVENT) return count // the episode began after this record
    if (event.type === PLAN_REVIEW_EVENT && presentsPlan(event.data as Record<string, unknown> | undefined)) count++
  }
  const start = episodeBefore(session, agentId)
  if (start === null) return count
  const after = start.after!
  if (seq <= after) return start.open?.find((open) => open.reviewId === reviewId)?.version ?? start.version
  // The checkpoint's episode holds the events up to its seq: count only the ones after it.
  const before = events.filter((event) => event.seq <= after && event.type === PLAN_REVIEW_EVENT && presentsPlan(event.data as Record<string, unknown> | undefined)).length
  return start.version + count - before
}
