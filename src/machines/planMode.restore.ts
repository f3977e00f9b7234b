import { createActor, type Snapshot } from 'xstate'
import type { PlanLogRestore } from '../log/kinds.js'
import type { PlanModePorts } from './planMode.effects.js'
import { planModeMachine } from './planMode.machine.js'
import { initialContext } from './planMode.setup.js'

/**
 * The chart's state rebuilt from a replayed log (R64), as a persisted snapshot: what
 * `createActor(planModeMachine, { snapshot })` restores, exactly as it would restore one read
 * from storage. The chart reads the fold: its context starts from it (K, the durable reviews),
 * and it chooses its own states: its initial snapshot takes `RESTORE` (the fold and P) through
 * its guarded transitions, as XState's pure `transition` takes them (an inert actor scope), so
 * no entry action runs and nothing is appended. A review the channel asked about never outlives
 * a reload (R60); a durable one the log holds open is open again (R79).
 *
 * The actor keeps the object it was restored from for its lifetime, so everything in it that
 * does not depend on the agent is shared: one frozen state value per configuration, one empty
 * `children` and `historyValue` (R70: memory per idle agent).
 */

const EMPTY = Object.freeze({})

/** The actor scope the machine's own `getInitialSnapshot` and `transition` take. */
type InertScope = Parameters<typeof planModeMachine.getInitialSnapshot>[0]

/**
 * What XState's pure `initialTransition` and `transition` make for each call, made once: an inert
 * actor scope whose action executor runs nothing. Nothing is spawned or scheduled on the way to a
 * restored configuration.
 */
let inertScope: InertScope | undefined
function scope(): InertScope {
  if (inertScope === undefined) {
    const self = createActor(planModeMachine)
    inertScope = {
      self,
      id: '',
      sessionId: '',
      system: self.system,
      logger: () => {},
      defer: () => {},
      emit: () => {},
      stopChild: () => {},
      actionExecutor: () => {},
    } as unknown as InertScope
  }
  return inertScope
}
const values = new Map<string, object>()

/**
 * The configuration the chart chooses for `RESTORE`, shared with every agent restored to it. Its
 * guards read four facts of the event (F, the open turn, whether a durable review is open, P's
 * target where it differs from F), so the chart takes the transition once per combination (an
 * inert actor scope per call, or even the transition per attach, would cost most of an attach).
 */
function chosenValue(fold: PlanLogRestore, pending: boolean | null): object {
  const key = `${fold.active} ${fold.openTurn} ${fold.review.open !== null} ${pending === fold.active ? null : pending}`
  let value = values.get(key)
  if (value === undefined) {
    const initial = planModeMachine.getInitialSnapshot(scope(), { fold })
    value = deepFreeze(planModeMachine.transition(initial, { type: 'RESTORE', fold, pending }, scope()).value as object)
    values.set(key, value)
  }
  return value
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
  return {
    status: 'active',
    value: chosenValue(fold, pending),
    // RESTORE's transitions have no actions: the context is the one the fold starts the chart with.
    context: initialContext(ports, closeTimeout, fold),
    children: EMPTY,
    historyValue: EMPTY,
  } as unknown as Snapshot<unknown>
}
