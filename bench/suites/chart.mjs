/**
 * Suite `chart` (reported, not a target): the library's chart alone against the floor chart
 * (bench/floor.mjs), flush and quiet, as the steps suite times them (bench/suites/steps.mjs): the
 * service's own attached actor driven by `actor.send`, without the queue and the facade. It shows
 * how much of a step is the chart itself (XState's work, the chart's guards, actions and ports,
 * the memory log), which no change to the facade or the queue can take back. In a process of its
 * own: beside the steps suite's sides it made the service's flush there 6 % slower (three paired
 * runs of bench/steps-ratios.mjs at issue #25), and a reported row must not move a target.
 */
import { interleave } from '../harness.mjs'
import { SECTION, warmUp } from '../steps.mjs'
import { createFloorPlanMode } from '../floor.mjs'
import { FLOOR_LENGTH, QUIET_FACTOR, ROUNDS, SAMPLES, floorSide, serviceSide, shapesOf } from './steps.mjs'

/**
 * The library's chart alone, for a log of n events: the service's own attached actor, driven by
 * `actor.send` (the queue and the facade's `perform` left out), with the service's `get` and
 * `section`. A selection is `SELECT` and a boundary `STEP_BOUNDARY`; what the chart emits for them
 * is their result (the memory log appends synchronously, so a flush has landed when `send`
 * returns). The news and the notice count as a message each, as the facade's narration makes
 * them; its texts are left out.
 */
export function chartSide(lib, n) {
  const side = serviceSide(lib, n)
  const { api: service, agent } = side
  const actor = service.actor(agent)
  let selected
  let boundary
  actor.on('selected', (emitted) => (selected = emitted))
  actor.on('boundary', (emitted) => (boundary = emitted))
  const sent = (event, told) => {
    actor.send(event)
    if (told() === undefined) throw new Error(`chart side: no answer to ${event.type}`)
  }
  side.api = {
    get: service.get,
    section: service.section,
    dispose: service.dispose,
    set(_, active) {
      selected = undefined
      sent({ type: 'SELECT', active }, () => selected)
      return selected.outcome
    },
    stepBoundary() {
      boundary = undefined
      sent({ type: 'STEP_BOUNDARY', aborted: false }, () => boundary)
      return { messages: [boundary.news, boundary.notice].filter((message) => message !== null) }
    },
  }
  return side
}

/**
 * Runs the suite.
 * @param {typeof import('../../dist/index.js')} lib
 * @returns {Promise<object>} per side and shape, the statistics of its samples (ns)
 */
export async function run(lib) {
  const subjects = { floor: floorSide(lib, FLOOR_LENGTH), chart: chartSide(lib, FLOOR_LENGTH) }
  const warmUpSteps = {
    chart: await warmUp(lib.createPlanMode({ section: SECTION }), lib),
    floor: await warmUp(createFloorPlanMode({ section: SECTION, foldPlanMode: lib.foldPlanMode }), lib),
  }
  const sides = {}
  for (const [key, side] of Object.entries(subjects)) {
    const { flush, quiet } = shapesOf(side, SAMPLES)
    Object.assign(sides, { [`${key}/flush`]: flush, [`${key}/quiet`]: quiet })
  }
  const results = await interleave(sides, { rounds: ROUNDS })
  // The flips really were appended and observed: one plan/mode per flush.
  for (const [key, side] of Object.entries(subjects)) {
    const appended = side.agent.session.events.length - FLOOR_LENGTH
    if (appended !== side.flips) throw new Error(`chart suite, ${key}: expected ${side.flips} plan/mode appends, saw ${appended}`)
    await side.api.dispose?.()
  }
  const shapes = (key) => ({ flush: results[`${key}/flush`], quiet: results[`${key}/quiet`] })
  return { rounds: ROUNDS, samples: SAMPLES, quietSamples: SAMPLES * QUIET_FACTOR, warmUpSteps, floorLength: FLOOR_LENGTH, floor: shapes('floor'), chart: shapes('chart') }
}
