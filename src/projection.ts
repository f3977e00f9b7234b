import type { SessionEvent } from './types.js'
import {
  COMMAND_DONE_EVENT,
  COMMAND_RUN_EVENT,
  PLAN_MODE_EVENT,
  PLAN_REVIEW_EVENT,
} from './log/events.js'

/** The projection's state: a pure fold of the log for UIs (R58). JSON data only. */
export interface PlanProjectionState {
  /** F: the last `plan/mode`. */
  readonly active: boolean
  /** Unsettled `/plan` runs, by commandId, with the mode each one selects. */
  readonly runs: Readonly<Record<string, boolean>>
  /** The latest successful selection (or approved exit) not yet followed by a `plan/mode`. */
  readonly kept: boolean | null
}

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

const INITIAL: PlanProjectionState = Object.freeze({ active: false, runs: Object.freeze({}), kept: null })

/** The mode a `/plan` run selects: `off` in any case leaves, anything else enters (R54). */
export function selectsPlanMode(args: string): boolean {
  return args.trim().toLowerCase() !== 'off'
}

function applyPlanProjection(state: PlanProjectionState, event: SessionEvent): PlanProjectionState {
  const data = event.data as Record<string, unknown> | null | undefined
  switch (event.type) {
    case PLAN_MODE_EVENT: {
      const active = data?.active
      // An invalid plan/mode is a corrupt log; the view ignores it (attach reports it, R61).
      if (typeof active !== 'boolean') return state
      if (state.active === active && state.kept === null) return state
      return { active, runs: state.runs, kept: null }
    }
    case COMMAND_RUN_EVENT: {
      if (data?.name !== 'plan' || typeof data.args !== 'string') return state
      const id = String(data.commandId)
      return { ...state, runs: { ...state.runs, [id]: selectsPlanMode(data.args) } }
    }
    case COMMAND_DONE_EVENT: {
      const id = String(data?.commandId)
      if (!Object.hasOwn(state.runs, id)) return state
      const { [id]: selected, ...runs } = state.runs
      // Only a successful run keeps its selection; the latest settled success wins.
      return { active: state.active, runs, kept: data?.kind === 'success' ? selected! : state.kept }
    }
    case PLAN_REVIEW_EVENT:
      // An approved exit is a selection of inactive, on its way to the next boundary.
      return data?.outcome === 'approved' ? { ...state, kept: false } : state
    default:
      return state
  }
}

/** The plan-mode projection (R58): a pure replay of the log for UIs; cold replays agree (R59). */
export const planProjection: PlanProjection = {
  key: 'plan',
  init: () => INITIAL,
  apply: applyPlanProjection,
  view(state) {
    const differs = (selected: boolean | null) => selected !== null && selected !== state.active
    return {
      active: state.active,
      pending: differs(state.kept) || Object.values(state.runs).some(differs),
    }
  },
}
