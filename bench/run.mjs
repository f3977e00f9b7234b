/**
 * `npm run bench` (= `npm run build && node bench/run.mjs`): runs every suite against the built
 * library, each in its own process, one after another, so they never compete for the cores;
 * judges the targets (bench/report.mjs); profiles each missed target in a process of its own
 * (bench/profile.mjs); writes bench/RESULTS.md and the targets table in docs/benchmarks.md. Every
 * number is measured in this run.
 *
 * `node bench/run.mjs --quick`: a smoke check (fewer rounds and samples, smaller logs, no 1e7
 * events) that writes bench/RESULTS.quick.md and leaves docs/benchmarks.md alone.
 * `--profile-all` profiles every target, missed or not.
 */
import { fork } from 'node:child_process'
import { cpSync, existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import { basename, resolve } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { LIB_URL, QUICK } from './harness.mjs'
import { evaluate, render, targetsTable } from './report.mjs'

// The build under test, copied once: other work may rebuild `dist/` while the suites run.
const libPath = fileURLToPath(LIB_URL)
if (!existsSync(libPath)) throw new Error(`${libPath} is missing: run \`npm run build\` first`)
const runLib = fileURLToPath(new URL('./.dist/', import.meta.url))
rmSync(runLib, { recursive: true, force: true })
cpSync(resolve(libPath, '..'), runLib, { recursive: true })
process.env.BENCH_RUN_LIB = resolve(runLib, basename(libPath))

const SUITES = ['steps', 'chart', 'attach', 'attach-idle', 'memory', 'filter', 'checkpoint', 'lru', 'reviews', 'guard', 'postgres', 'langgraph']
const PROFILE_ALL = process.argv.includes('--profile-all')

/**
 * Runs a script in a child process with `--expose-gc` (the memory suite reads settled heaps) and
 * room for the 1e7-event log, passing `--quick` on as `BENCH_QUICK=1`.
 * @param {string} script a file next to this one
 * @param {string[]} args
 * @returns {Promise<object>} the message the child sent
 * @throws when the child fails or exits without a result.
 */
function runChild(script, args) {
  return new Promise((resolve, reject) => {
    const child = fork(fileURLToPath(new URL(script, import.meta.url)), args, {
      // The TypeScript loader: the postgres suite starts its cluster with apps/shared/local-postgres.ts.
      execArgv: ['--expose-gc', '--max-old-space-size=8192', '--import', fileURLToPath(new URL('../apps/shared/register.mjs', import.meta.url))],
      env: { ...process.env, ...(QUICK ? { BENCH_QUICK: '1' } : {}) },
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    })
    let message
    child.on('message', (m) => (message = m))
    child.on('error', reject)
    child.on('exit', (code) =>
      code === 0 && message ? resolve(message) : reject(new Error(`${script} ${args.join(' ')} failed (exit code ${code})`)),
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
    library: LIB_URL,
    defaultLibrary: !process.env.BENCH_LIB,
    loadAtStart: os.loadavg(),
  }
}

const started = performance.now()
const info = machine()
info.suiteSeconds = {}
const results = {}
for (const suite of SUITES) {
  process.stdout.write(`bench: ${suite}… `)
  const t = performance.now()
  const { result } = await runChild('./child.mjs', [suite])
  results[suite] = result
  info.suiteSeconds[suite] = (performance.now() - t) / 1000
  process.stdout.write(`${info.suiteSeconds[suite].toFixed(1)} s\n`)
}

// A missed target is explained by a profile of its comparison, taken after every measurement.
const targets = evaluate(results)
const profiles = {}
for (const t of targets.filter((t) => PROFILE_ALL || !t.ok)) {
  if (t.profile === null || profiles[t.profile]) continue
  process.stdout.write(`bench: profile ${t.profile}… `)
  const t0 = performance.now()
  try {
    profiles[t.profile] = await runChild('./profile.mjs', [t.profile])
  } catch (error) {
    // The table stands without it; RESULTS.md says the profile failed.
    process.stdout.write(`failed: ${error.message} `)
  }
  const seconds = (performance.now() - t0) / 1000
  info.suiteSeconds[`profile ${t.profile}`] = seconds
  process.stdout.write(`${seconds.toFixed(1)} s\n`)
}

info.loadAtEnd = os.loadavg()
info.seconds = (performance.now() - started) / 1000
info.quick = QUICK
info.date = new Date().toISOString()

// `BENCH_OUT` writes elsewhere, e.g. when measuring a prototype build (`BENCH_LIB`).
const defaultOut = QUICK ? './RESULTS.quick.md' : './RESULTS.md'
const out = process.env.BENCH_OUT ? pathToFileURL(resolve(process.env.BENCH_OUT)) : new URL(defaultOut, import.meta.url)
writeFileSync(out, render(info, results, targets, profiles))
const table = targetsTable(targets)
process.stdout.write(`\n${table}\n\nbench: wrote ${fileURLToPath(out)} in ${info.seconds.toFixed(0)} s\n`)

// A full run of the built package also refreshes the table in docs/benchmarks.md, between its markers.
if (!QUICK && !process.env.BENCH_OUT && !process.env.BENCH_LIB) {
  const readme = new URL('../docs/benchmarks.md', import.meta.url)
  const text = readFileSync(readme, 'utf8')
  const [start, end] = ['<!-- bench:targets -->', '<!-- /bench:targets -->']
  const from = text.indexOf(start)
  const to = text.indexOf(end)
  if (from < 0 || to < from) throw new Error(`docs/benchmarks.md: the markers ${start} … ${end} are missing`)
  const machineLine = `Measured on ${info.date.slice(0, 10)}: ${info.cores} cores, Node ${info.node}, xstate ${info.xstate}.`
  writeFileSync(readme, `${text.slice(0, from + start.length)}\n${machineLine}\n\n${table}\n${text.slice(to)}`)
  process.stdout.write('bench: updated the targets table in docs/benchmarks.md\n')
}
