import type { StateValue } from 'xstate'
import type { PlanLogFold } from '../log/kinds.js'
import type { PlanModePorts } from './planMode.effects.js'
import { planModeMachine, type PlanModeContext } from './planMode.machine.js'
import type { PlanModeSnapshot } from './planMode.view.js'

/**
 * The snapshot an agent's actor starts from after replaying its log (R64): F, the open turn, K
 * and P, as the chart's state. No entry action runs and nothing is appended; no review is open
 * (a review never outlives a reload, R60).
 * @param pending P's target as the host's pending store kept it, else the log's kept selection;
 *   ignored when it equals F (P exists only where it differs).
 */
export function restoreSnapshot(fold: PlanLogFold, pending: boolean | null, ports: PlanModePorts): PlanModeSnapshot {
  const active = fold.projection.active
  const intent: StateValue =
    pending === null || pending === active ? 'logged' : { pending: { [pending ? 'entering' : 'leaving']: 'queued' } }
  const context: PlanModeContext = {
    told: fold.told,
    review: null,
    reviews: 0,
    closedReview: null,
    deferredSelection: null,
    result: null,
    ports,
  }
  return planModeMachine.resolveState({
    value: {
      mode: active ? 'active' : 'inactive',
      turn: fold.openTurn ? 'open' : 'idle',
      review: 'idle',
      intent,
      lifecycle: 'serving',
    },
    context,
  })
}
