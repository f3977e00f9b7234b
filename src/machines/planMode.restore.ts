import type { Snapshot } from 'xstate'
import type { PlanLogRestore } from '../log/kinds.js'
import type { PlanModePorts } from './planMode.effects.js'
import { initialContext } from './planMode.machine.js'

/**
 * The chart's state rebuilt from a replayed log (R64), as a persisted snapshot: what
 * `createActor(planModeMachine, { snapshot })` restores, exactly as it would restore one read
 * from storage. No entry action runs and nothing is appended; no review is open (a review never
 * outlives a reload, R60).
 *
 * The actor keeps the object it was restored from for its lifetime, so everything in it that
 * does not depend on the agent is shared: one frozen state value per configuration, one empty
 * `children` and `historyValue` (R70: memory per idle agent).
 */

const EMPTY = Object.freeze({})
const values = new Map<string, object>()

function stateValue(active: boolean, openTurn: boolean, pending: boolean | null): object {
  const key = `${active}${openTurn}${pending}`
  let value = values.get(key)
  if (value === undefined) {
    value = Object.freeze({
      mode: active ? 'active' : 'inactive',
      turn: openTurn ? 'open' : 'idle',
      review: 'idle',
      intent: pending === null ? 'logged' : Object.freeze({ pending: Object.freeze({ [pending ? 'entering' : 'leaving']: 'queued' }) }),
      lifecycle: 'serving',
    })
    values.set(key, value)
  }
  return value
}

/**
 * The persisted snapshot an agent's actor starts from.
 * @param pending P's target as the host's pending store kept it, else the log's kept selection;
 *   ignored when it equals F (P exists only where it differs).
 * @param closeTimeout the bounded wait of a reload or detach, in ms (R73).
 */
export function restoreSnapshot(
  fold: PlanLogRestore,
  pending: boolean | null,
  ports: PlanModePorts,
  closeTimeout: number,
): Snapshot<unknown> {
  const active = fold.active
  return {
    status: 'active',
    value: stateValue(active, fold.openTurn, pending === active ? null : pending),
    context: initialContext(ports, fold.told, closeTimeout),
    children: EMPTY,
    historyValue: EMPTY,
  } as unknown as Snapshot<unknown>
}
