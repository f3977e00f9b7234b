/**
 * The agent steps the suites time, written once for every side of a comparison: the service,
 * the floor chart (bench/floor.mjs) and the re-folding baseline (bench/baseline.mjs) have the
 * same `get`/`set`/`stepBoundary`/`section` shapes, so each side does exactly the same calls.
 */
import { realisticEntries } from './log.mjs'
import { QUICK } from './harness.mjs'

/** The configured plan-policy section (its length does not matter to any cost measured). */
export const SECTION = 'Plan mode is on: investigate and present a plan; do not change files.'

/**
 * Drives a side's step paths on a small log before anything is timed: XState's transition code
 * takes thousands of macrosteps to reach its steady speed, and without this the first log length
 * measured would pay for it and the table would show the warm-up curve, not the cost.
 * @param {{ get: Function, set: Function, stepBoundary: Function, section: Function, dispose?: Function }} api
 *   a fresh service or floor, used for the warm-up only
 * @param {{ createMemorySessionLog: Function }} lib
 * @param {number} [ms] how long to drive it
 * @returns {Promise<number>} the number of steps taken
 */
export async function warmUp(api, lib, ms = QUICK ? 300 : 1500) {
  const session = lib.createMemorySessionLog(realisticEntries(1000, 7))
  const agent = { id: 'warm-up', session }
  const side = sideOf(api, agent, api.get(agent).active)
  const until = performance.now() + ms
  let steps = 0
  while (performance.now() < until) {
    await flipStep(side)
    await boundaryStep(side)
    await queueFlip(side)
    await boundaryStep(side)
    steps += 3
  }
  await api.dispose?.()
  return steps
}

/**
 * One side of a comparison and what it last reported as F.
 * @param {{ get: Function, set: Function, stepBoundary: Function, section: Function }} api
 * @param {{ id: string, session: object }} agent
 * @param {boolean} active F as the side reports it now
 * @param {boolean} [checkNotice] whether a flush must narrate exactly one notice
 */
export function sideOf(api, agent, active, checkNotice = true) {
  return { api, agent, active, flips: 0, checkNotice }
}

/**
 * Queues `set(!F)` within the open turn: the next boundary has a flip to flush.
 * @throws when the selection did not queue (the log must end in an open turn).
 */
export async function queueFlip(side) {
  const outcome = await side.api.set(side.agent, !side.active)
  if (outcome !== 'queued') throw new Error(`expected 'queued', got '${outcome}'`)
}

/**
 * The step a host takes: the boundary, then `get` and `section` for the request.
 * @throws when a flush did not narrate (the side's result would be wrong, not just slow).
 */
export async function boundaryStep(side) {
  const { messages } = await side.api.stepBoundary(side.agent)
  const { active } = side.api.get(side.agent)
  side.api.section(side.agent)
  if (active !== side.active) {
    // A flush: it was appended, and the model is told (K is defined: the log has request headers).
    if (side.checkNotice && messages.length !== 1) throw new Error(`expected one notice, got ${messages.length}`)
    side.active = active
    side.flips++
  }
}

/** A selection within the open turn, then the step that flushes it. */
export async function flipStep(side) {
  await queueFlip(side)
  await boundaryStep(side)
}
