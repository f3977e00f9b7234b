import type { SnapshotFrom } from 'xstate'
import type { planModeMachine } from './planMode.machine.js'
import { APPENDING_TAG } from './planMode.setup.js'
import type { OpenReviewView, PlanModeState } from '../types.js'

/**
 * The chart's snapshot as callers see it: the only place outside the chart that reads its state
 * values, so the rest of the library never spells them.
 */

/** A snapshot of the plan-mode chart. */
export type PlanModeSnapshot = SnapshotFrom<typeof planModeMachine>

/**
 * The chart's state value, as its regions shape it. Read directly rather than through `matches`,
 * which parses its argument on every call: `get` and `section` run on every step (R70).
 */
interface PlanModeValue {
  mode: { active: string } | { inactive: string }
  review: 'idle' | object
  intent: 'logged' | { committing: string } | { pending: { entering?: unknown; leaving?: unknown } }
  lifecycle: 'serving' | 'closing' | 'stopped'
}

/** F, the logged mode (R2). */
export function isLoggedActive(snapshot: PlanModeSnapshot): boolean {
  return 'active' in (snapshot.value as PlanModeValue).mode
}

/** P's target, or undefined when no selection is pending (R7). */
function pendingTarget(snapshot: PlanModeSnapshot): boolean | undefined {
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

/**
 * E, the effective state, as the chart defines it (§0, `EFFECTIVELY_ACTIVE`), read from the state
 * value: `section` runs on every step, and `matches` parses each of the three values (R70).
 */
export function isEffectivelyActive(snapshot: PlanModeSnapshot): boolean {
  const value = snapshot.value as PlanModeValue
  const pending = pendingTarget(snapshot)
  if (pending !== undefined) return pending // { intent: { pending: 'entering' } }
  // { mode: 'active', intent: 'logged' } or { mode: 'active', intent: 'committing' }
  return 'active' in value.mode && (value.intent === 'logged' || 'committing' in value.intent)
}

/** A durable review is open and waits for its answer: the log holds it (R79). */
function isAwaitingReview(snapshot: PlanModeSnapshot): boolean {
  return snapshot.matches({ review: { open: { undecided: 'awaiting' } } })
}

/**
 * The open durable review as the chart knows it (R79), or null: everything `openReview` returns but
 * the plan's version (R138), which the service reads from the log's history of the episode.
 */
export function openDurableReview(snapshot: PlanModeSnapshot): Omit<OpenReviewView, 'version'> | null {
  const review = snapshot.context.review
  if (review?.durable === undefined || !isAwaitingReview(snapshot)) return null
  // The chart's `durable.version` is the request's seq, as the log's record and checkpoints name it.
  const { reviewId, version: seq = 0, callId } = review.durable
  const view: Omit<OpenReviewView, 'version'> = { reviewId, title: review.title, plan: review.plan, seq }
  if (callId !== undefined) view.callId = callId
  return view
}

/** A log append is in flight: the next operation waits (§1). */
export function isAppending(snapshot: PlanModeSnapshot): boolean {
  return snapshot.hasTag(APPENDING_TAG)
}

/** A reload or detach is letting the work in flight land, or is done (R60, R63). */
export function isClosing(snapshot: PlanModeSnapshot): boolean {
  return (snapshot.value as PlanModeValue).lifecycle !== 'serving' || snapshot.status !== 'active'
}

/** The chart says the actor may stop: the work in flight has landed (R60, R63). */
export function isStopped(snapshot: PlanModeSnapshot): boolean {
  return (snapshot.value as PlanModeValue).lifecycle === 'stopped' || snapshot.status !== 'active'
}

/**
 * Nothing of the agent lives only in its actor: no review (nor a selection that closed one, still
 * to follow), no append in flight, and no pending selection unless `keepsPending` (a pending store holds it). Such an agent
 * can leave memory and attach again from its log (R77).
 */
export function canLeaveMemory(snapshot: PlanModeSnapshot, keepsPending: boolean): boolean {
  const value = snapshot.value as PlanModeValue
  return (
    snapshot.status === 'active' &&
    value.lifecycle === 'serving' &&
    // A durable review is the log's to hold (R79).
    (value.review === 'idle' || isAwaitingReview(snapshot)) &&
    // A logged /plan heard and not settled yet: its done must find the run (R86).
    snapshot.context.heardRuns === undefined &&
    !isAppending(snapshot) &&
    (keepsPending || value.intent === 'logged')
  )
}
