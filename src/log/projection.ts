import type { SessionEvent } from './session.js'
import { EMPTY_PROJECTION, projectPlanLogEvent, type PlanProjectionState } from './kinds.js'

export type { PlanProjectionState } from './kinds.js'

/** What a UI shows: the mode, and whether a change is on its way (a FLAG, unlike `get().pending`). */
export interface PlanProjectionView {
  active: boolean
  pending: boolean
}

/** The plan-mode projection: `init`, `apply` and `view`, keyed `plan` (R58, R59). */
export interface PlanProjection {
  readonly key: 'plan'
  init(): PlanProjectionState
  apply(state: PlanProjectionState, event: SessionEvent): PlanProjectionState
  view(state: PlanProjectionState): PlanProjectionView
}

/**
 * The plan-mode projection (R58): a pure replay of the log for UIs, each kind read as the log's
 * table says; cold replays agree (R59).
 */
export const planProjection: PlanProjection = {
  key: 'plan',
  init: () => EMPTY_PROJECTION,
  apply: projectPlanLogEvent,
  view(state) {
    const differs = (selected: boolean | null) => selected !== null && selected !== state.active
    return {
      active: state.active,
      pending: differs(state.kept) || Object.values(state.runs).some(differs),
    }
  },
}
