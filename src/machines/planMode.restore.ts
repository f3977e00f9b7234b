import type { Snapshot } from 'xstate'
import type { PlanLogRestore } from '../log/kinds.js'
import type { PlanModePorts } from './planMode.effects.js'
import { initialContext, type OpenReview } from './planMode.machine.js'

/**
 * The chart's state rebuilt from a replayed log (R64), as a persisted snapshot: what
 * `createActor(planModeMachine, { snapshot })` restores, exactly as it would restore one read
 * from storage. No entry action runs and nothing is appended. A review the channel asked about
 * never outlives a reload (R60); a durable one the log holds open is open again (R79).
 *
 * The actor keeps the object it was restored from for its lifetime, so everything in it that
 * does not depend on the agent is shared: one frozen state value per configuration, one empty
 * `children` and `historyValue` (R70: memory per idle agent).
 */

const EMPTY = Object.freeze({})
const values = new Map<string, object>()

const AWAITING = Object.freeze({ open: Object.freeze({ undecided: 'awaiting' }) })

function stateValue(active: boolean, openTurn: boolean, pending: boolean | null, reviewing: boolean): object {
  const key = `${active}${openTurn}${pending}${reviewing}`
  let value = values.get(key)
  if (value === undefined) {
    value = Object.freeze({
      mode: active ? 'active' : 'inactive',
      turn: openTurn ? 'open' : 'idle',
      review: reviewing ? AWAITING : 'idle',
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
  const { open, closed, news } = fold.review
  const review: OpenReview | null =
    open === null
      ? null
      : { number: 1, plan: open.plan, title: open.title, result: null, durable: open.callId === undefined ? { reviewId: open.reviewId, version: open.version } : { reviewId: open.reviewId, version: open.version, callId: open.callId } }
  return {
    status: 'active',
    value: stateValue(active, fold.openTurn, pending === active ? null : pending, review !== null),
    context: initialContext(ports, fold.told, closeTimeout, { review, lastClosed: closed, news }),
    children: EMPTY,
    historyValue: EMPTY,
  } as unknown as Snapshot<unknown>
}
