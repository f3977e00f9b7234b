/**
 * Suite `lru` (R77): what a service with `maxAttachedAgents: BOUND` keeps after TOUCHES different
 * agents were touched in turn, against what BOUND attached agents take.
 * - bounded: one service with `maxAttachedAgents: BOUND`; TOUCHES agents, each with a fresh small
 *   memory log (LOG_LENGTH events of the realistic mix, ending idle), touched once each, in turn:
 *   `planMode.get(agent)`, and every SET_EVERY-th touch then `await planMode.set(agent, !active)`
 *   (committed at once: the turn is closed, so nothing stays pending). The bench lets each agent
 *   and its log go after touching it, so whatever is still alive is what the service keeps.
 *   The settled heap (bench/harness.mjs `settledHeap`) is read READINGS times along the way,
 *   each after a `setImmediate` (the evicted agents' closes have landed), minus the settled heap
 *   read right after the service was made and had attached one agent (its one-time set-up), or
 *   the one read once it was disposed and let go when that is lower (`baseOf`); a run with a
 *   reading below its base is measured again, once (bench/harness.mjs `heapGrowth`);
 * - reference: BOUND agents touched the same way by a service without a bound (all of them stay
 *   attached), the growth of its settled heap: BOUND agents' worth, logs included, as the
 *   service keeps an attached agent's log through the agent object. Measured in REF_ROUNDS
 *   rounds in this process, before and after the bounded run.
 * Target: every reading ≤ (BOUND + BOUND / 10) × (reference growth ÷ BOUND).
 * Each touch is timed (the `get`, and the awaited `set` where there is one): the bounded service's
 * touch includes the eviction of the least recently used agent; the reference's does not.
 */
import { realisticEntries } from '../log.mjs'
import { QUICK, heapGrowth, measuredValidly, nowNs, settledHeap, stats } from '../harness.mjs'
import { SECTION } from '../steps.mjs'

export const BOUND = QUICK ? 500 : 1000
export const TOUCHES = QUICK ? 10_000 : 100_000
/** Heap readings along the bounded run, evenly spaced, the last after the last touch. */
const READINGS = 4
const REF_ROUNDS = QUICK ? 2 : 4
/** Every SET_EVERY-th touch also selects plan mode (`set`), committed and appended to its log. */
const SET_EVERY = 4
/** A small log: a turn or two of an agent that has just started (as in the memory suite). */
export const LOG_LENGTH = 24
/** The slack of the target, in agents: BOUND / SLACK_DIVISOR. */
export const SLACK_DIVISOR = 10

/**
 * The entries of agent i's log: the realistic mix, closed by a `turn/end` so the agent is idle.
 * A log cut between a `/plan` run and its `plan/mode` would keep a selection pending (such an
 * agent cannot leave memory without a pending store, R77): the next seed is taken instead.
 * @param {number} i
 */
function entriesOf(i) {
  for (let seed = i + 1; ; seed += TOUCHES) {
    const entries = [...realisticEntries(LOG_LENGTH - 1, seed)] // ends inside an open turn
    const run = entries.findLastIndex((entry) => entry.type === 'command/run')
    if (run >= 0 && !entries.slice(run).some((entry) => entry.type === 'plan/mode')) continue
    entries.push({ type: 'turn/end', data: { reason: 'stop' } })
    return entries
  }
}

/**
 * Touches agent `i` of `service` once: makes its agent and log (untimed), then `get`, then on
 * every SET_EVERY-th touch an awaited `set` that flips the mode. Nothing of the agent is kept by the bench.
 * @returns {Promise<number>} the touch's time, ns
 */
async function touch(lib, service, prefix, i) {
  const agent = { id: `${prefix}-${i}`, session: lib.createMemorySessionLog(entriesOf(i)) }
  const start = nowNs()
  const { active } = service.get(agent)
  if (i % SET_EVERY === 0) {
    const outcome = await service.set(agent, !active)
    if (outcome !== 'committed') throw new Error(`lru suite: set answered ${outcome}, not committed`)
  }
  return nowNs() - start
}

/** Lets the evicted agents' closes (promise chains) land before a reading. */
const settle = () => new Promise((resolve) => setImmediate(resolve))

/**
 * Makes a service, attaches one agent before the baseline (the service's one-time set-up is not
 * an agent's cost), and reads the baseline. The service is held in `held`, so that `baseOf` can
 * let it go.
 */
async function start(lib, options, prefix) {
  const held = { service: lib.createPlanMode({ section: SECTION, ...options }) }
  await touch(lib, held.service, `${prefix}-first`, 1)
  await settle()
  return { held, started: settledHeap() }
}

/**
 * Disposes the service and lets it go, and returns the base its readings are taken over: the lower
 * of the heap read at the start (the service and one agent) and the heap read once it is gone
 * (neither). In a normal run the start is the lower: the end also holds the code compiled during
 * the run. But a start can hold what the run before had let go: in one run every reading fell
 * 0.5 MiB below it, in another they read 7.3 MiB against a reference of 7.6 (8.0 in other runs),
 * the start holding up to 8 MiB that was gone by the first reading. The end's base leaves the
 * service's own set-up in the readings: a bias towards a miss, of a few KiB.
 */
async function baseOf(held, started) {
  await held.service.dispose()
  held.service = undefined
  await settle()
  return Math.min(started, settledHeap())
}

/**
 * The reference: `count` agents touched by a service without a bound, all still attached.
 * @returns {Promise<{ bytes: number, times: Float64Array }>} the heap growth, the touches' times
 */
async function reference(lib, count, prefix) {
  const times = new Float64Array(count)
  const { held, started } = await start(lib, {}, prefix)
  for (let i = 0; i < count; i++) times[i] = await touch(lib, held.service, prefix, i)
  await settle()
  const heap = settledHeap()
  const [bytes] = heapGrowth(await baseOf(held, started), [heap], 'lru suite, reference')
  return { bytes, times }
}

/**
 * The bounded run: `touches` agents touched by a service with `maxAttachedAgents: bound`.
 * @returns {Promise<{ readings: { touches: number, bytes: number }[], times: Float64Array }>}
 */
async function bounded(lib, bound, touches, prefix) {
  const times = new Float64Array(touches)
  const every = touches / READINGS
  const readings = []
  const { held, started } = await start(lib, { limits: { maxAttachedAgents: bound } }, prefix)
  for (let i = 0; i < touches; i++) {
    times[i] = await touch(lib, held.service, prefix, i)
    if ((i + 1) % every === 0) {
      await settle()
      readings.push({ touches: i + 1, heap: settledHeap() })
    }
  }
  const bytes = heapGrowth(await baseOf(held, started), readings.map((r) => r.heap), 'lru suite, bounded')
  return { readings: readings.map((r, i) => ({ touches: r.touches, bytes: bytes[i] })), times }
}

/**
 * The two sides as bench/profile.mjs's heap profile takes them: each a function of `count` (the
 * bound, in agents) that returns what keeps the service alive, `make` (the touches), `check` and
 * `teardown`. The bounded side touches `touches` agents with `maxAttachedAgents: count`; the
 * reference side touches `count` agents without a bound.
 * @param {typeof import('../../dist/index.js')} lib
 * @param {number} touches
 */
export function lruSides(lib, touches) {
  const side = (count, options, n, prefix) => {
    const service = lib.createPlanMode({ section: SECTION, ...options })
    return {
      service,
      make: async () => {
        await touch(lib, service, `${prefix}-first`, 1)
        for (let i = 0; i < n; i++) await touch(lib, service, prefix, i)
        await settle()
      },
      check: () => {},
      teardown: () => service.dispose(),
    }
  }
  return {
    library: (count) => side(count, { limits: { maxAttachedAgents: count } }, touches, 'lru'),
    floor: (count) => side(count, {}, count, 'ref'),
  }
}

/** Statistics of the touches' times, split by whether the touch had a `set`. */
function touchStats(times) {
  const gets = []
  const sets = []
  for (let i = 0; i < times.length; i++) (i % SET_EVERY === 0 ? sets : gets).push(times[i])
  return { all: stats(Array.from(times)), get: stats(gets), getSet: stats(sets) }
}

/**
 * Runs the suite.
 * @param {typeof import('../../dist/index.js')} lib
 * @returns {Promise<object>} the readings, the reference, and the touches' times
 */
export async function run(lib) {
  // A run whose reading fell below its base is measured again, once (counted, reported).
  const retried = { count: 0 }
  // Warm-up: code compiled during a reading would otherwise count as memory.
  await measuredValidly(() => reference(lib, Math.min(BOUND, 500), 'warm-ref'), retried)
  await measuredValidly(() => bounded(lib, BOUND, Math.max(4_000, 4 * BOUND), 'warm-lru'), retried)
  const refBytes = []
  const refTimes = []
  const refRound = async (round) => {
    const { bytes, times } = await measuredValidly(() => reference(lib, BOUND, `ref${round}`), retried)
    refBytes.push(bytes)
    refTimes.push(...times)
  }
  for (let round = 0; round < REF_ROUNDS / 2; round++) await refRound(round)
  const started = performance.now()
  const { readings, times } = await measuredValidly(() => bounded(lib, BOUND, TOUCHES, 'lru'), retried)
  const boundedSeconds = (performance.now() - started) / 1000
  for (let round = REF_ROUNDS / 2; round < REF_ROUNDS; round++) await refRound(round)
  const bytes = readings.map((r) => r.bytes)
  return {
    bound: BOUND,
    touches: TOUCHES,
    logLength: LOG_LENGTH,
    setEvery: SET_EVERY,
    slackDivisor: SLACK_DIVISOR,
    refRounds: REF_ROUNDS,
    heapRetries: retried.count,
    readings,
    boundedSeconds,
    // Bytes, as the report's targets take them: the readings (each a sample), the reference.
    heap: { ...stats(bytes), max: Math.max(...bytes), min: Math.min(...bytes) },
    reference: stats(refBytes, refBytes.map((b) => [b])),
    touch: { bounded: touchStats(times), reference: touchStats(Float64Array.from(refTimes)) },
  }
}
