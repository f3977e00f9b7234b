import type { SnapshotFrom, StateValue } from 'xstate'
import { APPENDING_TAG, planModeMachine, type PlanModeContext } from './planModeMachine.js'
import type { PlanModeState } from '../types.js'

/**
 * The mapping between the chart's snapshot and what callers see, and from a replayed log back to
 * a snapshot. One place reads state values, so the rest of the library never spells them.
 */

/** A snapshot of the plan-mode chart. */
export type PlanModeSnapshot = SnapshotFrom<typeof planModeMachine>

/**
 * The chart's state value, as its regions shape it. Read directly rather than through
 * `snapshot.matches`, which parses its argument on every call: `get` and `section` run on every
 * step (R70).
 */
interface PlanModeValue {
  mode: 'active' | 'inactive'
  intent: 'logged' | { committing: string } | { pending: { entering?: unknown; leaving?: unknown } }
}

/** F, the logged mode (R2). */
export function isLoggedActive(snapshot: PlanModeSnapshot): boolean {
  return (snapshot.value as PlanModeValue).mode === 'active'
}

/** P's target, or undefined when no selection is pending (R7). */
export function pendingTarget(snapshot: PlanModeSnapshot): boolean | undefined {
  const { intent } = snapshot.value as PlanModeValue
  if (typeof intent !== 'object' || !('pending' in intent)) return undefined
  return 'entering' in intent.pending
}

/** What `get` returns (R7). */
export function planModeState(snapshot: PlanModeSnapshot): PlanModeState {
  const active = isLoggedActive(snapshot)
  const pending = pendingTarget(snapshot)
  return pending === undefined ? { active } : { active, pending }
}

/** E, the effective state: P's target when P exists, else F (§0). */
export function isEffectivelyActive(snapshot: PlanModeSnapshot): boolean {
  return pendingTarget(snapshot) ?? isLoggedActive(snapshot)
}

/** A log append is in flight: the next operation must wait (SPEC §1 serialization). */
export function isAppending(snapshot: PlanModeSnapshot): boolean {
  return snapshot.hasTag(APPENDING_TAG)
}

/** What attach rebuilds from the log (R64), as the chart's state. */
export interface AttachedState {
  active: boolean
  openTurn: boolean
  told: boolean | null
  /** P's target; ignored when it equals F (R64: P only where it differs). */
  pending: boolean | null
}

/**
 * The snapshot an agent's actor starts from after replaying its log (R64): no entry action
 * runs, nothing is appended, and no review is open (a review never outlives a reload, R60).
 */
export function attachedSnapshot({ active, openTurn, told, pending }: AttachedState): PlanModeSnapshot {
  const intent: StateValue =
    pending === null || pending === active ? 'logged' : { pending: { [pending ? 'entering' : 'leaving']: 'queued' } }
  const context: PlanModeContext = { told, review: null, deferredSelection: null }
  return planModeMachine.resolveState({
    value: { mode: active ? 'active' : 'inactive', turn: openTurn ? 'open' : 'idle', review: 'idle', intent },
    context,
  })
}
