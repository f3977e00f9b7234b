import { initialTransition, transition, type Snapshot } from 'xstate'
import type { PlanLogRestore } from '../log/kinds.js'
import type { PlanModePorts } from './planMode.effects.js'
import { planModeMachine } from './planMode.machine.js'

/**
 * The chart's state rebuilt from a replayed log (R64), as a persisted snapshot: what
 * `createActor(planModeMachine, { snapshot })` restores, exactly as it would restore one read
 * from storage. The chart reads the fold: its context starts from it (K, the durable reviews), and
 * it chooses its own states: its initial snapshot takes `RESTORE` (the fold and P) through its
 * guarded transitions, under XState's pure `transition`, so no entry action
 * runs and nothing is appended. A review the channel asked about never outlives a reload (R60);
 * a durable one the log holds open is open again (R79).
 *
 * The actor keeps the object it was restored from for its lifetime, so everything in it that
 * does not depend on the agent is shared: one frozen state value per configuration, one empty
 * `children` and `historyValue` (R70: memory per idle agent).
 */

const EMPTY = Object.freeze({})
const values = new Map<string, object>()

/** The state value the chart chose, shared with every agent in the same configuration. */
function shared(value: unknown): object {
  const key = JSON.stringify(value)
  let frozen = values.get(key)
  if (frozen === undefined) {
    frozen = deepFreeze(value as object)
    values.set(key, frozen)
  }
  return frozen
}

function deepFreeze(value: object): object {
  for (const child of Object.values(value)) if (typeof child === 'object' && child !== null) deepFreeze(child as object)
  return Object.freeze(value)
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
  const [initial] = initialTransition(planModeMachine, { ports, closeTimeout, fold })
  const [restored] = transition(planModeMachine, initial, { type: 'RESTORE', fold, pending })
  return {
    status: 'active',
    value: shared(restored.value),
    context: restored.context,
    children: EMPTY,
    historyValue: EMPTY,
  } as unknown as Snapshot<unknown>
}
