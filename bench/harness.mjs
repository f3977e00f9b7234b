/**
 * Shared pieces of the benchmark suites: the library under test, a tinybench wrapper that
 * reports per-operation nanoseconds, and GC/heap helpers.
 */
import { resolve } from 'node:path'
import { pathToFileURL } from 'node:url'
import { Bench } from 'tinybench'

/**
 * The module under test: the built package (`dist/index.js`, what users run), or the file named
 * by `BENCH_LIB` (used to measure a prototype build of a scratch copy against the same suites).
 */
export const LIB_URL = process.env.BENCH_LIB
  ? pathToFileURL(resolve(process.env.BENCH_LIB)).href
  : new URL('../dist/index.js', import.meta.url).href

/**
 * Imports the library under test.
 * @returns {Promise<typeof import('../dist/index.js')>}
 * @throws when the library is not built (run `npm run build` first).
 */
export async function loadLibrary() {
  return import(LIB_URL)
}

/** `BENCH_QUICK=1` shortens every measurement: for developing the benches, not for results. */
export const QUICK = process.env.BENCH_QUICK === '1'

/**
 * Measures `fn` with tinybench and returns nanoseconds per operation. `batch` operations run
 * per call, because a single sub-microsecond operation would measure the timer, not the code.
 * Pass `async: true` for a function that returns a promise: tinybench otherwise calls a plain
 * function once, unawaited, to find out whether it is asynchronous.
 * @param {() => unknown} fn one call runs `batch` operations
 * @param {{ time?: number, iterations?: number, warmupTime?: number, warmupIterations?: number,
 *   batch?: number, async?: boolean, beforeEach?: () => unknown, afterEach?: () => unknown }} [options]
 * @returns {Promise<{ ns: number, p50: number, rme: number, samples: number }>}
 * @throws the task's own error, so a broken bench never reports a number.
 */
export async function measure(fn, options = {}) {
  const { batch = 1, beforeEach, afterEach } = options
  const scale = QUICK ? 0.2 : 1
  const bench = new Bench({
    time: (options.time ?? 400) * scale,
    iterations: options.iterations ?? 32,
    warmupTime: (options.warmupTime ?? 100) * scale,
    warmupIterations: options.warmupIterations ?? 8,
    throws: true,
  })
  bench.add('task', options.async ? async () => fn() : fn, { beforeEach, afterEach })
  await bench.run()
  const { latency } = bench.tasks[0].result
  const perOp = 1e6 / batch // ms per call → ns per operation
  return {
    ns: latency.mean * perOp,
    p50: (latency.p50 ?? latency.mean) * perOp,
    rme: latency.rme,
    samples: latency.samples.length,
  }
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

/**
 * Nanoseconds since an arbitrary origin, for loops timed by hand.
 * @returns {number}
 */
export function nowNs() {
  return Number(process.hrtime.bigint())
}

/**
 * The median of a list of numbers (robust against one round hit by a GC pause).
 * @param {number[]} values
 * @returns {number}
 */
export function median(values) {
  const sorted = [...values].sort((a, b) => a - b)
  const mid = sorted.length >> 1
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2
}
