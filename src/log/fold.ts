import type { SessionEvent } from '../types.js'
import { PLAN_MODE_EVENT } from './events.js'

/**
 * Throws when `event` is a `plan/mode` whose `active` is not a boolean (R61); every other
 * event passes.
 * @throws Error `plan/mode carries invalid active state <JSON>; expected a boolean`
 */
export function validatePlanModeEvent(event: SessionEvent): void {
  if (event.type !== PLAN_MODE_EVENT) return
  const active = (event.data as { active?: unknown } | null | undefined)?.active
  if (typeof active !== 'boolean') {
    throw new Error(
      `plan/mode carries invalid active state ${JSON.stringify(active) ?? 'undefined'}; expected a boolean`,
    )
  }
}

/**
 * The fold F (R2): `active` of the last `plan/mode` in `events[0, end)`, or `false` when there
 * is none; `end` defaults to the whole log.
 * @throws like `validatePlanModeEvent` on any invalid `plan/mode` in that range (R61).
 */
export function foldPlanMode(events: readonly SessionEvent[], end: number = events.length): boolean {
  let active = false
  const stop = Math.min(end, events.length)
  for (let i = 0; i < stop; i++) {
    const event = events[i]!
    if (event.type === PLAN_MODE_EVENT) {
      validatePlanModeEvent(event)
      active = (event.data as { active: boolean }).active
    }
  }
  return active
}
