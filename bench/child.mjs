/**
 * Runs one suite in its own process and sends its result to the parent (bench/run.mjs). A
 * process per suite keeps one suite's heap, JIT state and leftover timers out of the next.
 */
import { loadLibrary } from './harness.mjs'

const [suite] = process.argv.slice(2)
const lib = await loadLibrary()
const { run } = await import(`./suites/${suite}.mjs`)
const started = performance.now()
const result = await run(lib)
process.send({ suite, seconds: (performance.now() - started) / 1000, result }, () => process.exit(0))
