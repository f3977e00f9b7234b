/**
 * The steps suite alone (bench/suites/steps.mjs), for comparing builds quickly: prints the
 * library's and the floor's medians and their ratio for flush, quiet and flip at 1e3 events, and
 * the CPU time the run took; with `--chart`, then the chart suite's ratios too (the library's chart
 * alone, bench/suites/chart.mjs). Ratios within one run hold under load; run it several times, A
 * and B interleaved.
 *
 * Usage: `npm run build && node --expose-gc bench/steps-ratios.mjs` (the built `dist/`), or
 * `BENCH_LIB=path/to/index.js node --expose-gc bench/steps-ratios.mjs` for a copy of a build (the
 * copy must sit inside the repository, so that its imports resolve).
 */
import { loadLibrary } from './harness.mjs'
import { run } from './suites/steps.mjs'
import { run as runChart } from './suites/chart.mjs'

const lib = await loadLibrary()
const cpu = process.cpuUsage()
const { rows } = await run(lib)
const { user, system } = process.cpuUsage(cpu)
const floor = rows.find((row) => row.key === 'floor')
const service = rows.find((row) => row.key === 'service@1000')
const parts = ['flush', 'quiet', 'flip'].map((shape) => {
  const [l, f] = [service[shape].median, floor[shape].median]
  return `${shape} ${(l / 1000).toFixed(1)} µs / ${(f / 1000).toFixed(1)} µs = ${(l / f).toFixed(2)}×`
})
if (process.argv.includes('--chart')) {
  const chart = await runChart(lib)
  const ratioOf = (shape) => (chart.chart[shape].median / chart.floor[shape].median).toFixed(2)
  parts.push(`chart alone (its own rounds): flush ${ratioOf('flush')}×, quiet ${ratioOf('quiet')}×`)
}
console.log(`${parts.join(' | ')} | cpu (steps suite) ${((user + system) / 1e6).toFixed(1)} s`)
