/**
 * Suite `steps`: one agent step, three shapes, timed as `stepBoundary` + `get` + `section`:
 * - flush: a selection was queued within the open turn (`set(!F)` → 'queued', untimed, before
 *   each sample); the boundary appends `plan/mode` and narrates the switch;
 * - quiet: nothing pending; the boundary appends nothing;
 * - flip: the same as flush, but the queuing `set` is timed too.
 * Four kinds of side, all driven by the same code (bench/steps.mjs):
 * - the service at log lengths 1e3…1e6 (attached once, untimed): the flatness targets compare
 *   1e6 with 1e3;
 * - the floor chart (bench/floor.mjs) on a 1e3-event log: the flush and quiet targets compare the
 *   service at 1e3 with it;
 * - the re-folding baseline (bench/baseline.mjs) at every length: a reported column only;
 * - the floor chart paying for parts of the library's shape (`SHAPED`, flush and quiet only):
 *   reported, to show what each part costs by itself against the floor.
 * The library's chart driven directly (`chartSide`) runs in a suite of its own (bench/suites/chart.mjs).
 * Every side is measured in every round, the order rotating from round to round, so drift (JIT,
 * GC, a neighbour on the shared cores) falls on all of them alike.
 */
import { realisticEntries } from '../log.mjs'
import { createRefoldBaseline } from '../baseline.mjs'
import { createFloorPlanMode } from '../floor.mjs'
import { QUICK, interleave } from '../harness.mjs'
import { SECTION, boundaryStep, flipStep, queueFlip, sideOf, warmUp } from '../steps.mjs'

/** Rounds; each visits every side once. */
export const ROUNDS = QUICK ? 3 : 9
/** Log lengths of the service and the baseline; the flatness targets take the last over the first. */
export const LENGTHS = QUICK ? [1e3, 1e5] : [1e3, 1e4, 1e5, 1e6]
/** The floor's log length, and the service's that is compared with it. */
export const FLOOR_LENGTH = 1e3
/**
 * Timed samples per round of a flush or flip for the service and the floor (tens of µs each); a
 * quiet boundary (a few µs) takes QUIET_FACTOR times as many, so that each round's mean spans
 * several collections as the others' do.
 */
export const SAMPLES = QUICK ? 60 : 300
export const QUIET_FACTOR = 5

/** The three step shapes as `interleave` sides of one subject. */
export function shapesOf(side, samples) {
  return {
    flush: { run: () => boundaryStep(side), before: () => queueFlip(side), samples },
    quiet: { run: () => boundaryStep(side), samples: samples * QUIET_FACTOR },
    flip: { run: () => flipStep(side), samples },
  }
}

/**
 * Runs the suite.
 * @param {typeof import('../../dist/index.js')} lib
 * @returns {Promise<object>} per subject and shape, the statistics of its samples (ns)
 */
export async function run(lib) {
  const subjects = [
    { key: 'floor', n: FLOOR_LENGTH, side: floorSide(lib, FLOOR_LENGTH), samples: SAMPLES },
    ...Object.entries(SHAPED).map(([key, shape]) => ({ key, n: FLOOR_LENGTH, side: floorSide(lib, FLOOR_LENGTH, shape), samples: SAMPLES, shapes: ['flush', 'quiet'] })),
    ...LENGTHS.map((n) => ({ key: `service@${n}`, n, side: serviceSide(lib, n), samples: SAMPLES })),
    // Big logs take milliseconds per baseline step: fewer samples keep the suite in budget.
    ...LENGTHS.map((n) => ({ key: `baseline@${n}`, n, side: baselineSide(lib, n), samples: n >= 1e6 ? 3 : n >= 1e5 ? 10 : 40 })),
  ]
  const warmUpSteps = {
    service: await warmUp(lib.createPlanMode({ section: SECTION }), lib),
    floor: await warmUp(createFloorPlanMode({ section: SECTION, foldPlanMode: lib.foldPlanMode }), lib),
    shaped: await warmUp(createFloorPlanMode({ section: SECTION, foldPlanMode: lib.foldPlanMode, decides: true, queued: true, configured: true }), lib),
  }

  // One `interleave` round per round here, over every subject's three shapes, the subjects in a
  // rotated order each round; `interleave` pools each side's samples over the rounds.
  const sides = {}
  for (const { key, side, samples, shapes } of subjects) {
    for (const [shape, s] of Object.entries(shapesOf(side, samples))) {
      if (shapes !== undefined && !shapes.includes(shape)) continue
      // The baseline's flushes and flips are cut back off its log, so it always folds n events.
      sides[`${key}/${shape}`] = side.cutBack ? { ...s, after: side.cutBack, warmup: 1 } : s
    }
  }
  const results = await interleave(sides, { rounds: ROUNDS })

  const rows = subjects.map(({ key, n, side, shapes = ['flush', 'quiet', 'flip'] }) => {
    const row = { key, n, flips: side.flips, finalLength: side.agent.session.events.length }
    for (const shape of shapes) row[shape] = results[`${key}/${shape}`]
    return row
  })
  // The flips really were appended and observed: one plan/mode per flush or flip.
  for (const { key, n, side } of subjects) {
    if (!side.cutBack && side.agent.session.events.length - n !== side.flips) {
      throw new Error(`${key}: expected ${side.flips} plan/mode appends, saw ${side.agent.session.events.length - n}`)
    }
    await side.api.dispose?.()
  }
  return { rows, rounds: ROUNDS, samples: SAMPLES, quietSamples: SAMPLES * QUIET_FACTOR, warmUpSteps, floorLength: FLOOR_LENGTH, lengths: LENGTHS }
}

/** The service's side for a log of n events: attached now, so no replay is ever timed. */
export function serviceSide(lib, n) {
  const session = lib.createMemorySessionLog(realisticEntries(n))
  const agent = { id: `agent-${n}`, session }
  const pm = lib.createPlanMode({ section: SECTION, logger: { warn() {} } })
  return sideOf(pm, agent, pm.get(agent).active)
}

/**
 * The floor chart paying for parts of the library's shape (bench/floor.mjs `decides`, `queued`,
 * `configured`): what each costs by itself against the floor (reported, not a target). The issue
 * asks for the first two; the configuration is the library's own.
 */
export const SHAPED = {
  'floor+queue': { queued: true },
  'floor+decides': { decides: true },
  'floor+decides+queue': { decides: true, queued: true },
  'floor+configuration': { configured: true },
  'floor+all three': { decides: true, queued: true, configured: true },
}

/** The floor chart's side for a log of n events (its step does not read the log), in `shape`. */
export function floorSide(lib, n, shape = {}) {
  const session = lib.createMemorySessionLog(realisticEntries(n))
  const agent = { id: `floor-${n}`, session }
  const floor = createFloorPlanMode({ section: SECTION, foldPlanMode: lib.foldPlanMode, ...shape })
  return sideOf(floor, agent, floor.get(agent).active)
}

/**
 * The baseline's side for a log of n events, with `cutBack`: after a flush or flip (untimed) the
 * log goes back to n events, so the baseline always folds exactly n.
 */
function baselineSide(lib, n) {
  const session = lib.createMemorySessionLog(realisticEntries(n))
  const agent = { id: `agent-${n}`, session }
  const baseline = createRefoldBaseline({ section: SECTION, foldPlanMode: lib.foldPlanMode, noticeTexts: lib.PLAN_MODE_TEXTS?.notices ?? lib.NOTICE_TEXTS })
  const initial = baseline.get(agent).active
  // Cutting the log back also undoes the flip the baseline's K remembers, so its notices come
  // and go; a notice costs a microsecond against its folds, so it is not checked.
  const side = sideOf(baseline, agent, initial, false)
  side.cutBack = () => {
    // The appended plan/mode goes, and F with it.
    session.events.length = n
    side.active = initial
  }
  return side
}
