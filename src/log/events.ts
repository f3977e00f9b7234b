/** The log event types plan mode reads or writes, and their payloads. */

/** The mode's only durable fact (R1): `{ active }`, a whole-value replacement. */
export const PLAN_MODE_EVENT = 'plan/mode'
/** A plan review's outcome, the plan's version history (R49). */
export const PLAN_REVIEW_EVENT = 'plan/review'
/** Turn bounds: the latest of the two tells whether a turn is open (R5). */
export const TURN_START_EVENT = 'turn/start'
export const TURN_END_EVENT = 'turn/end'
/** Logged by the host per request: the model was told the mode in force then (R30). */
export const REQUEST_HEADER_EVENT = 'request/header'
/** A host command run and its settlement, folded by the projection (R58). */
export const COMMAND_RUN_EVENT = 'command/run'
export const COMMAND_DONE_EVENT = 'command/done'

/** Payload of `plan/mode`. */
export interface PlanModeData {
  active: boolean
}

/** Every way a review can end (R49). */
export type ReviewOutcome =
  | 'approved'
  | 'keep-planning'
  | 'dismissed'
  | 'failed'
  | 'aborted'
  | 'superseded'
  | 'reloaded'

/** Payload of `plan/review` (R49). */
export interface PlanReviewData {
  outcome: ReviewOutcome
  title: string
  plan: string
  feedback?: string
}
