import type { SessionEvent } from '../types.js'
import { planProjection, type PlanProjectionState } from '../projection.js'
import {
  COMMAND_DONE_EVENT,
  COMMAND_RUN_EVENT,
  PLAN_MODE_EVENT,
  PLAN_REVIEW_EVENT,
  REQUEST_HEADER_EVENT,
  TURN_END_EVENT,
  TURN_START_EVENT,
} from './events.js'
import { validatePlanModeEvent } from './fold.js'

/** Everything the log can tell plan mode at attach (R64). */
export interface PlanLogFold {
  /** The projection's state: F (`active`) and the kept selection (R58). */
  readonly projection: PlanProjectionState
  /** The latest of turn/start, turn/end is a turn/start (R5). */
  readonly openTurn: boolean
  /** K, what the model was last told (R31): null when never told. */
  readonly told: boolean | null
  /** The seq of the last event folded (-Infinity for an empty log). */
  readonly lastSeq: number
}

/** The fold of an empty log: a new agent starts inactive, idle, untold (R4). */
export const EMPTY_PLAN_LOG_FOLD: PlanLogFold = {
  projection: planProjection.init(),
  openTurn: false,
  told: null,
  lastSeq: -Infinity,
}

/**
 * Folds one event into `fold` (the incremental fold of R64, R70). Returns `fold` itself for
 * events that cannot matter.
 * @throws on an invalid `plan/mode` (R61).
 */
export function foldPlanLogEvent(fold: PlanLogFold, event: SessionEvent): PlanLogFold {
  switch (event.type) {
    case TURN_START_EVENT:
      return { ...fold, openTurn: true, lastSeq: event.seq }
    case TURN_END_EVENT:
      return { ...fold, openTurn: false, lastSeq: event.seq }
    case REQUEST_HEADER_EVENT:
      // The request was derived under the mode logged at that point.
      return { ...fold, told: fold.projection.active, lastSeq: event.seq }
    case PLAN_MODE_EVENT:
      validatePlanModeEvent(event)
      return { ...fold, projection: planProjection.apply(fold.projection, event), lastSeq: event.seq }
    case PLAN_REVIEW_EVENT:
    case COMMAND_RUN_EVENT:
    case COMMAND_DONE_EVENT: {
      const projection = planProjection.apply(fold.projection, event)
      const approved = event.type === PLAN_REVIEW_EVENT && (event.data as { outcome?: unknown })?.outcome === 'approved'
      // An approval's tool result told the model it left plan mode (R30).
      return { ...fold, projection, told: approved ? false : fold.told, lastSeq: event.seq }
    }
    default:
      return fold
  }
}

/**
 * Replays a whole log once (R64, R71): F, the open turn, K and the kept selection. The same
 * rules as `foldPlanLogEvent`, kept in locals: one object at the end instead of one per event,
 * so that attach costs close to a bare `foldPlanMode` loop.
 * @throws on an invalid `plan/mode` (R61): the agent cannot attach until the log is repaired.
 */
export function replayPlanLog(events: readonly SessionEvent[]): PlanLogFold {
  let projection = EMPTY_PLAN_LOG_FOLD.projection
  let openTurn = false
  let told: boolean | null = null
  for (let i = 0; i < events.length; i++) {
    const event = events[i]!
    // Literal labels: a switch over imported constants is measurably slower in the built bundle.
    switch (event.type) {
      case 'turn/start':
        openTurn = true
        break
      case 'turn/end':
        openTurn = false
        break
      case 'request/header':
        told = projection.active
        break
      case 'plan/mode':
        validatePlanModeEvent(event)
        projection = planProjection.apply(projection, event)
        break
      case 'plan/review':
        if ((event.data as { outcome?: unknown } | null)?.outcome === 'approved') told = false
        projection = planProjection.apply(projection, event)
        break
      case 'command/run':
      case 'command/done':
        projection = planProjection.apply(projection, event)
        break
    }
  }
  const last = events[events.length - 1]
  return { projection, openTurn, told, lastSeq: last === undefined ? -Infinity : last.seq }
}
