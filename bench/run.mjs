/**
 * `npm run bench`: runs every suite (each in its own process, one after another, so they never
 * compete for the two cores) against the built library and writes bench/RESULTS.md: the machine,
 * the targets with PASS/MISS, and each suite's table. Every number is measured in this run.
 */
import { fork } from 'node:child_process'
import { readFileSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import { resolve } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { LIB_URL, QUICK } from './harness.mjs'
import { render } from './report.mjs'

const SUITES = ['steps', 'attach', 'filter', 'memory', 'actor']

/**
 * Runs one suite in a child process with `--expose-gc`.
 * @param {string} suite
 * @returns {Promise<{ suite: string, seconds: number, result: object }>}
 * @throws when the child fails or exits without a result.
 */
function runSuite(suite) {
  return new Promise((resolve, reject) => {
    const child = fork(fileURLToPath(new URL('./child.mjs', import.meta.url)), [suite], {
      execArgv: ['--expose-gc'],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    })
    let message
    child.on('message', (m) => (message = m))
    child.on('error', reject)
    child.on('exit', (code) =>
      code === 0 && message ? resolve(message) : reject(new Error(`suite ${suite} failed (exit code ${code})`)),
    )
  })
}

/** The installed version of a dependency (read from disk: not every package exports its package.json). */
function versionOf(name) {
  const file = new URL(`../node_modules/${name}/package.json`, import.meta.url)
  return JSON.parse(readFileSync(file, 'utf8')).version
}

/** What the report says about the machine and the run. */
function machine() {
  const cpus = os.cpus()
  return {
    cpu: cpus[0]?.model.trim() ?? 'unknown',
    cores: cpus.length,
    memoryGiB: os.totalmem() / 2 ** 30,
    node: process.version,
    platform: `${os.platform()} ${os.arch()} (${os.release()})`,
    xstate: versionOf('xstate'),
    tinybench: versionOf('tinybench'),
    library: LIB_URL,
    defaultLibrary: !process.env.BENCH_LIB,
    loadAtStart: os.loadavg(),
  }
}

const started = performance.now()
const info = machine()
const results = {}
for (const suite of SUITES) {
  process.stdout.write(`bench: ${suite}… `)
  const { seconds, result } = await runSuite(suite)
  results[suite] = result
  process.stdout.write(`${seconds.toFixed(1)} s\n`)
}
info.loadAtEnd = os.loadavg()
info.seconds = (performance.now() - started) / 1000
info.quick = QUICK
info.date = new Date().toISOString()

// `BENCH_OUT` writes elsewhere, e.g. when measuring a prototype build (`BENCH_LIB`).
const out = process.env.BENCH_OUT ? pathToFileURL(resolve(process.env.BENCH_OUT)) : new URL('./RESULTS.md', import.meta.url)
const markdown = render(info, results)
writeFileSync(out, markdown)
const targets = markdown.slice(markdown.indexOf('## Targets'), markdown.indexOf('## 1.'))
process.stdout.write(`\n${targets}`)
process.stdout.write(`bench: wrote ${fileURLToPath(out)} in ${info.seconds.toFixed(0)} s\n`)

// A full run of the built package also refreshes the table in the README, between its markers.
if (!QUICK && !process.env.BENCH_OUT && !process.env.BENCH_LIB) {
  const readme = new URL('../README.md', import.meta.url)
  const text = readFileSync(readme, 'utf8')
  const [start, end] = ['<!-- bench:targets -->', '<!-- /bench:targets -->']
  const from = text.indexOf(start)
  const to = text.indexOf(end)
  if (from < 0 || to < from) throw new Error(`README.md: the markers ${start} … ${end} are missing`)
  const table = targets.replace('## Targets\n', '').trim()
  const machineLine = `Measured on ${info.date.slice(0, 10)}: ${os.cpus().length} cores, Node ${process.version}.`
  writeFileSync(readme, `${text.slice(0, from + start.length)}\n${machineLine}\n\n${table}\n${text.slice(to)}`)
  process.stdout.write('bench: updated the targets table in README.md\n')
}
