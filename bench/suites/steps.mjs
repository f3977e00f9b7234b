/**
 * Suite 1 (R70): the cost of one agent step at log lengths 1e3…1e6, the service against the
 * re-folding baseline. Three shapes of step, each timed as `stepBoundary` + `get` + `section`
 * unless said otherwise:
 * - flush: a selection was queued within the open turn (`set(!F)`, untimed, before each
 *   iteration); the boundary appends `plan/mode` and narrates the switch;
 * - quiet: nothing pending; the boundary appends nothing;
 * - flip: the same as flush, but the queuing `set` is timed too.
 * The service is attached once before timing. Its log grows by one `plan/mode` per flush or flip
 * (the service must observe real appends: a few thousand events, which an O(1) step cannot
 * notice); the baseline's log is cut back to its length after each step (untimed), so the
 * baseline always folds exactly `n` events.
 */
import { realisticEntries } from '../log.mjs'
import { createRefoldBaseline } from '../baseline.mjs'
import { QUICK, measure } from '../harness.mjs'
import { SECTION, boundaryStep, flipStep, queueFlip, sideOf, warmUp } from '../steps.mjs'

/** Rounds of measurements; each round visits every log length on both sides (see `run`). */
const ROUNDS = QUICK ? 2 : 9

/**
 * Runs suite 1.
 * @param {typeof import('../../dist/index.js')} lib
 * @returns {Promise<{ rows: object[], warmUpSteps: number, rounds: number }>} rows per log length
 */
export async function run(lib) {
  const lengths = QUICK ? [1e3, 1e5] : [1e3, 1e4, 1e5, 1e6]
  // Per log length, one agent attached to the service (the replay is untimed) and one on the
  // baseline, each on its own copy of the same log.
  const subjects = lengths.map((n) => ({ n, ours: serviceSide(lib, n), base: baselineSide(lib, n) }))
  const warmUpSteps = await warmUp(lib)

  // Interleaved rounds: drift (JIT, GC) falls on every length and both sides alike instead of on
  // whichever ran first or last. A figure is the best round's median: on a shared machine, a
  // round that ran while another process held the sibling core comes out about 2× slower (seen
  // here, at every log length alike), and that is the neighbour's cost, not the code's.
  const results = subjects.map(() => ({}))
  const record = (i, key, measurement) => (results[i][key] ??= []).push(measurement)
  const ours = { async: true, time: 100, warmupTime: 20, iterations: 16, warmupIterations: 4 }
  for (let round = 0; round < ROUNDS; round++) {
    for (const [i, { n, ours: side, base }] of subjects.entries()) {
      record(i, 'oursFlush', await measure(() => boundaryStep(side), { ...ours, beforeEach: () => queueFlip(side) }))
      record(i, 'oursQuiet', await measure(() => boundaryStep(side), ours))
      record(i, 'oursFlip', await measure(() => flipStep(side), ours))
      // Big logs take milliseconds per baseline step: fewer iterations keep the suite in budget.
      const few = { ...ours, iterations: n >= 1e6 ? 4 : 8, warmupIterations: 1 }
      record(i, 'baseFlush', await measure(() => boundaryStep(base), { ...few, beforeEach: () => queueFlip(base), afterEach: base.cutBack }))
      record(i, 'baseQuiet', await measure(() => boundaryStep(base), few))
      record(i, 'baseFlip', await measure(() => flipStep(base), { ...few, afterEach: base.cutBack }))
    }
  }

  const rows = []
  for (const [i, { n, ours: side }] of subjects.entries()) {
    const row = { n, oursFinalLength: side.agent.session.events.length }
    for (const [key, measurements] of Object.entries(results[i])) row[key] = combine(measurements)
    // The flips really were appended and observed: one plan/mode per flush or flip.
    if (row.oursFinalLength - n !== side.flips) {
      throw new Error(`expected ${side.flips} plan/mode appends, saw ${row.oursFinalLength - n}`)
    }
    await side.api.dispose()
    rows.push(row)
  }
  return { rows, warmUpSteps, rounds: ROUNDS }
}

/** The service's side for a log of n events: attached now, so no replay is ever timed. */
function serviceSide(lib, n) {
  const session = lib.createMemorySessionLog(realisticEntries(n))
  const agent = { id: `agent-${n}`, session }
  const pm = lib.createPlanMode({ section: SECTION }, { logger: { warn() {} } })
  return sideOf(pm, agent, pm.get(agent).active)
}

/**
 * The baseline's side for a log of n events, with `cutBack`: after a flush or flip (untimed) the
 * log goes back to n events, so the baseline always folds exactly n.
 */
function baselineSide(lib, n) {
  const session = lib.createMemorySessionLog(realisticEntries(n))
  const agent = { id: `agent-${n}`, session }
  const baseline = createRefoldBaseline({ section: SECTION, foldPlanMode: lib.foldPlanMode, NOTICE_TEXTS: lib.NOTICE_TEXTS })
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

/** One figure from several rounds: the lowest of their medians, the mean of their means. */
function combine(measurements) {
  return {
    p50: Math.min(...measurements.map((m) => m.p50)),
    roundP50s: measurements.map((m) => m.p50),
    ns: measurements.reduce((sum, m) => sum + m.ns, 0) / measurements.length,
    rme: Math.max(...measurements.map((m) => m.rme)),
    samples: measurements.reduce((sum, m) => sum + m.samples, 0),
  }
}
