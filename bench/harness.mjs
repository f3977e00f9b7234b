/**
 * Shared pieces of the benchmark suites: the library under test, the interleaved-rounds sampler
 * every comparison uses, the statistics the report shows, and GC/heap helpers.
 */
import { resolve } from 'node:path'
import { pathToFileURL } from 'node:url'

/**
 * The module under test: the built package (`dist/index.js`, what users run), or the file named
 * by `BENCH_LIB` (used to measure a prototype build of a scratch copy against the same suites).
 * bench/run.mjs copies `dist/` to `bench/.dist/` when it starts and points its children at the
 * copy (`BENCH_RUN_LIB`): a rebuild during the run cannot mix two builds in one set of results.
 */
export const LIB_URL = process.env.BENCH_RUN_LIB
  ? pathToFileURL(resolve(process.env.BENCH_RUN_LIB)).href
  : process.env.BENCH_LIB
    ? pathToFileURL(resolve(process.env.BENCH_LIB)).href
    : new URL('../dist/index.js', import.meta.url).href

/**
 * Imports the library under test, with the statechart (`planModeMachine`, which the core entry
 * left for `/inspect` in issue #25) beside the core's exports, where the suites read it.
 * @returns {Promise<typeof import('../dist/index.js') & Pick<typeof import('../dist/inspect.js'), 'planModeMachine'>>}
 * @throws when the library is not built (run `npm run build` first).
 */
export async function loadLibrary() {
  const core = await import(LIB_URL)
  if ('planModeMachine' in core) return core // a build from before #25
  const { planModeMachine } = await import(new URL('./inspect.js', LIB_URL).href)
  return { ...core, planModeMachine }
}

/**
 * `--quick` (or `BENCH_QUICK=1`; bench/run.mjs passes it on to its children as the latter): fewer
 * rounds and samples, smaller logs, no 1e7-event log. A smoke check of the benches, not results.
 */
export const QUICK = process.env.BENCH_QUICK === '1' || process.argv.includes('--quick')

/**
 * Nanoseconds since an arbitrary origin, for loops timed by hand.
 * @returns {number}
 */
export function nowNs() {
  return Number(process.hrtime.bigint())
}

/**
 * One side of a comparison, as `interleave` drives it.
 * @typedef {object} Side
 * @property {() => unknown} run the timed operation (awaited, whether or not it returns a promise)
 * @property {number} samples timed operations per round
 * @property {() => unknown} [before] untimed, before each timed operation (e.g. queue a selection)
 * @property {() => unknown} [after] untimed, after each timed operation (e.g. dispose a service)
 * @property {number} [warmup] untimed operations at the start of every round (default 2)
 * @property {(result: unknown, startNs: number) => number} [elapsed] the operation's time, when it ends
 *   in another process: from `run`'s result (a timestamp taken there on the same monotonic clock as
 *   `nowNs`) and its start; without it, the time until `run` settles
 */

/**
 * Runs the sides of a comparison alternately in `rounds` rounds, each round taking `samples`
 * timed operations per side; the order of the sides rotates by one every round (two sides swap
 * places every round), so no side always runs first or last. Every side
 * awaits every operation, so the cost of an `await` is on both sides of a ratio. All samples of a
 * side are pooled: the report shows their median, p90 and mean, never a best round.
 * @param {Record<string, Side>} sides
 * @param {{ rounds: number }} options
 * @returns {Promise<Record<string, Stats>>} per side, in nanoseconds per operation
 * @throws the operation's own error, so a broken bench never reports a number.
 */
export async function interleave(sides, { rounds }) {
  const names = Object.keys(sides)
  const samples = Object.fromEntries(names.map((name) => [name, []]))
  const perRound = Object.fromEntries(names.map((name) => [name, []]))
  for (let round = 0; round < rounds; round++) {
    const start = round % names.length
    const order = [...names.slice(start), ...names.slice(0, start)]
    for (const name of order) {
      const side = sides[name]
      for (let i = 0; i < (side.warmup ?? 2); i++) {
        await side.before?.()
        await side.run()
        await side.after?.()
      }
      const taken = await sample(side)
      samples[name].push(...taken)
      perRound[name].push(taken)
    }
  }
  return Object.fromEntries(names.map((name) => [name, stats(samples[name], perRound[name])]))
}

/**
 * Takes one round's timed samples of a side.
 * @param {Side} side
 * @returns {Promise<number[]>} nanoseconds per operation
 */
async function sample(side) {
  const taken = new Array(side.samples)
  for (let i = 0; i < side.samples; i++) {
    if (side.before) await benchUntimed(side.before)
    const start = nowNs()
    const result = await side.run()
    taken[i] = side.elapsed ? side.elapsed(result, start) : nowNs() - start
    if (side.after) await benchUntimed(side.after)
  }
  return taken
}

/**
 * Calls an untimed hook. Named so that bench/profile.mjs can leave the hooks' synchronous work
 * out of a profile of the timed operation; `async` because V8 never inlines an async function,
 * so this frame is always on the stack of the hook's work.
 */
export async function benchUntimed(hook) {
  return hook()
}

/**
 * Calls `fn(arg)` from a call site that has seen many different functions. V8 inlines a small
 * function into a caller whose call site has seen only it, and a profile then books the callee's
 * time to the caller (a bench frame); a megamorphic site is never inlined, so the profile names
 * the callee. Costs a few nanoseconds: use it where an operation takes micro- or milliseconds.
 * @template A, R
 * @param {(arg: A) => R} fn
 * @param {A} arg
 * @returns {R}
 */
export function opaque(fn, arg) {
  return fn(arg)
}
// Five different callees make the site megamorphic before any bench calls it, called often enough
// that V8 has allocated the function's feedback (it does so only after a few calls) and saw them.
const callees = [(x) => x, (x) => [x], (x) => ({ x }), (x) => `${x}`, (x) => x === 0]
for (let i = 0; i < 200; i++) opaque(callees[i % callees.length], i)

/**
 * The statistics of one side's samples.
 * @typedef {{ median: number, p90: number, mean: number, roundMean: number, n: number,
 *   roundMedians: number[], roundMeans: number[] }} Stats
 */

/**
 * Summarizes samples: median (what ratios are taken of), p90 (the tail beside it), the mean of
 * all samples, and the median of the rounds' means (`roundMean`). A mean catches what a median
 * hides, GC pauses that grow with the heap; but on a shared machine one preemption by another
 * process (milliseconds) also moves the mean of a few thousand µs-operations by tens of percent.
 * A cost that grows with the log shows in every round's mean; a preemption lands in one round:
 * the median of the round means keeps the first and drops the second.
 * @param {number[]} values all samples
 * @param {number[][]} [rounds] the same samples, round by round
 * @returns {Stats}
 */
export function stats(values, rounds = [values]) {
  const sorted = Float64Array.from(values).sort()
  const roundMeans = rounds.map(mean)
  return {
    median: quantile(sorted, 0.5),
    p90: quantile(sorted, 0.9),
    mean: mean(values),
    roundMean: percentile(roundMeans, 0.5),
    n: sorted.length,
    roundMedians: rounds.map((round) => percentile(round, 0.5)),
    roundMeans,
  }
}

function mean(values) {
  let sum = 0
  for (const v of values) sum += v
  return sum / values.length
}

/**
 * The q-quantile of a list of numbers (linear interpolation between the closest ranks).
 * @param {number[]} values
 * @param {number} q between 0 and 1
 * @returns {number}
 */
export function percentile(values, q) {
  return quantile(Float64Array.from(values).sort(), q)
}

function quantile(sorted, q) {
  if (sorted.length === 0) return NaN
  const at = (sorted.length - 1) * q
  const low = Math.floor(at)
  const high = Math.min(low + 1, sorted.length - 1)
  return sorted[low] + (sorted[high] - sorted[low]) * (at - low)
}

/**
 * The median of a list of numbers.
 * @param {number[]} values
 * @returns {number}
 */
export function median(values) {
  return percentile(values, 0.5)
}

/**
 * Runs a full collection and returns the heap in use after it. Two passes, because objects
 * with finalizers or weak references need a second one to be reclaimed.
 * @returns {number} bytes
 * @throws when node was not started with `--expose-gc`.
 */
export function settledHeap() {
  if (typeof globalThis.gc !== 'function') throw new Error('run node with --expose-gc')
  globalThis.gc()
  globalThis.gc()
  return process.memoryUsage().heapUsed
}

/** A side's heap reading fell below the heap read before it made anything: it measured nothing. */
export class InvalidHeapReading extends Error {}

/**
 * The growth of settled heaps read while a measured side held what it made (`readings`) over
 * `started`, the settled heap read before it made it. A reading below `started` means `started`
 * held something the run before had let go, which no later reading holds: in one run of the lru
 * suite every reading fell about 0.5 MiB below it (a start holding some 8 MiB gone by the first
 * reading), and the report published a negative heap as a pass.
 * @param {number} started
 * @param {number[]} readings
 * @param {string} what the side, for the error
 * @returns {number[]} bytes
 * @throws {InvalidHeapReading} when a reading falls below `started`.
 */
export function heapGrowth(started, readings, what) {
  const below = readings.find((heap) => heap < started)
  if (below !== undefined) throw new InvalidHeapReading(`${what}: a heap reading (${below} B) fell below the heap read before it (${started} B): no valid reading`)
  return readings.map((heap) => heap - started)
}

/**
 * Runs `measure`, and once more when its heap readings were not valid (`InvalidHeapReading`), so
 * that a leftover of the run before costs a round, not the result; counts the retries in
 * `retried.count`. A second invalid run throws: the suite reports no number.
 * @template T
 * @param {() => Promise<T>} measure
 * @param {{ count: number }} retried
 * @returns {Promise<T>}
 */
export async function measuredValidly(measure, retried) {
  try {
    return await measure()
  } catch (error) {
    if (!(error instanceof InvalidHeapReading)) throw error
    retried.count++
    return measure()
  }
}
