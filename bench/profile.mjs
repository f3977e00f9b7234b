/**
 * Profiles one comparison in its own process, for a target the run missed (bench/run.mjs forks
 * it after the suites, so profiling never disturbs a measurement): both sides of the comparison
 * are set up by the suite's own code and run under the inspector's `Profiler` (CPU) or
 * `HeapProfiler` sampling (memory) in this process. What comes back is summarized, not raw:
 * per side, the time (or retained bytes) per operation by where the code lives (xstate's `dist`,
 * the library's `dist` mapped back to `src/` through its source maps, the bench, node, GC) and
 * the top functions by self time (or by retained bytes).
 *
 * Usage: `node --expose-gc bench/profile.mjs <case>`, the case one of `step:flush`, `step:quiet`,
 * `step:flip`, `flat:flush`, `flat:quiet`, `flat:flip`, `attach:<n>:<fresh|shared>`,
 * `attach-idle`, `memory`, `checkpoint:<tail|whole>`, `lru`. Sends its result to the parent over IPC, or prints it without one.
 */
import { readFileSync } from 'node:fs'
import { Session } from 'node:inspector/promises'
import { SourceMap } from 'node:module'
import { fileURLToPath } from 'node:url'
import { LIB_URL, QUICK, benchUntimed, interleave, loadLibrary } from './harness.mjs'
import { SECTION, queueFlip, boundaryStep, sideOf, warmUp } from './steps.mjs'
import { createFloorPlanMode } from './floor.mjs'
import { FLOOR_LENGTH, LENGTHS, floorSide, serviceSide, shapesOf } from './suites/steps.mjs'
import { attachSides, logOf } from './suites/attach.mjs'
import { attachIdleSides } from './suites/attach-idle.mjs'
import { AGENTS, memorySides } from './suites/memory.mjs'
import { checkpointLogs, checkpointSides } from './suites/checkpoint.mjs'
import { BOUND, TOUCHES, lruSides } from './suites/lru.mjs'
import { reviewSides } from './suites/reviews.mjs'
import { guardSides } from './suites/guard.mjs'
import { realisticEntries } from './log.mjs'

/** How long each side runs under the profiler, in how many alternating slices. */
const PROFILE_MS = QUICK ? 500 : 2000
const PROFILE_SLICES = 4
/** The CPU profiler's sampling interval, µs: fine enough for operations of a few µs. */
const SAMPLING_US = 100
/** The heap profiler's sampling interval, bytes: fine enough for objects of an idle agent. */
const HEAP_SAMPLING_BYTES = 1024
/** Agents made under the heap profiler: enough samples for a per-agent split, in a few seconds. */
const HEAP_AGENTS = Math.min(AGENTS, 5_000)
const LIB_DIR = new URL('.', LIB_URL).href

/**
 * Sets up a case: its two sides (as `interleave` sides), their labels, and anything counted.
 * @param {typeof import('../dist/index.js')} lib
 * @param {string} name
 */
async function setUp(lib, name) {
  const [kind, a, b] = name.split(':')
  if (kind === 'step') {
    await warmUp(lib.createPlanMode({ section: SECTION }), lib)
    await warmUp(createFloorPlanMode({ section: SECTION, foldPlanMode: lib.foldPlanMode }), lib)
    const service = shapesOf(serviceSide(lib, FLOOR_LENGTH), 200)[a]
    const floor = shapesOf(floorSide(lib, FLOOR_LENGTH), 200)[a]
    return {
      kind: 'cpu',
      labels: { lib: `service, ${FLOOR_LENGTH.toLocaleString('en-US')}-event log`, floor: 'floor chart' },
      columns: ['Library', 'Floor'],
      sides: { lib: service, floor },
      counts: await countSteps(lib, a),
    }
  }
  if (kind === 'flat') {
    await warmUp(lib.createPlanMode({ section: SECTION }), lib)
    const [low, high] = [LENGTHS[0], LENGTHS.at(-1)]
    return {
      kind: 'cpu',
      labels: { lib: `service, ${high.toLocaleString('en-US')} events`, floor: `service, ${low.toLocaleString('en-US')} events` },
      columns: [`1e${Math.log10(high)} events`, `1e${Math.log10(low)} events`],
      sides: { lib: shapesOf(serviceSide(lib, high), 200)[a], floor: shapesOf(serviceSide(lib, low), 200)[a] },
    }
  }
  if (kind === 'attach') {
    const n = Number(a)
    const agent = { id: 'agent', session: logOf(lib, n, b) }
    const { attach, fold } = attachSides(lib, agent, 3)
    return { kind: 'cpu', labels: { lib: 'attach (`createPlanMode(…).get`)', floor: 'warm `foldPlanMode`' }, sides: { lib: attach, floor: fold } }
  }
  if (kind === 'attach-idle') {
    const { attach, floor } = attachIdleSides(lib, 1000)
    return { kind: 'cpu', labels: { lib: '`planMode.get(newAgent)`', floor: '`createActor(planModeMachine, { snapshot }).start()`' }, sides: { lib: attach, floor } }
  }
  if (kind === 'memory') {
    const { library, floor } = memorySides(lib)
    return { kind: 'heap', labels: { lib: 'idle attached agents', floor: 'bare started actors' }, sides: { lib: library, floor } }
  }
  if (kind === 'checkpoint') {
    const logs = checkpointLogs(lib)
    const sides = checkpointSides(lib, logs, 200)
    const what = a === 'whole' ? 'held whole' : `loaded as its last ${logs.tail.events.length} events`
    return {
      kind: 'cpu',
      labels: { lib: `attach from a checkpoint, ${logs.whole.events.length.toLocaleString('en-US')}-event log ${what}`, floor: `attach of a ${logs.short.events.length}-event log` },
      sides: { lib: sides[a], floor: sides.short },
    }
  }
  if (kind === 'lru') {
    // Bytes per agent of the bound: what the bounded service keeps after all its touches ÷ B,
    // against what B agents touched without a bound keep ÷ B.
    const sides = lruSides(lib, TOUCHES)
    return {
      kind: 'heap',
      labels: { lib: `service with \`maxAttachedAgents: ${BOUND}\` after ${TOUCHES.toLocaleString('en-US')} touches`, floor: `${BOUND} agents touched without a bound` },
      sides: { lib: sides.library, floor: sides.floor },
      warmSides: Object.values(lruSides(lib, 800)),
      count: BOUND,
      warmCount: 200,
    }
  }
  if (kind === 'reviews') {
    const { sides } = reviewSides(lib, 200)
    return { kind: 'cpu', labels: { lib: 'durable review: exit call + `answerReview`', floor: 'channel review: exit call' }, sides: { lib: sides.durable, floor: sides.channel } }
  }
  if (kind === 'guard') {
    const { sides } = await guardSides(lib, 2000)
    return { kind: 'cpu', labels: { lib: 'guarded tool call (`guard.run`, observe)', floor: 'tool call + one `append`' }, sides: { lib: sides.guarded, floor: sides.floor } }
  }
  throw new Error(`unknown profile case ${name}`)
}

/**
 * What one operation asks of XState, counted through the inspection API on a fresh agent of
 * each side: the agent actor's macrosteps (events it processed), microsteps, actions run, and
 * the actors it spawned or invoked.
 * @param {typeof import('../dist/index.js')} lib
 * @param {'flush' | 'quiet' | 'flip'} shape
 */
async function countSteps(lib, shape) {
  const counted = {}
  for (const which of ['lib', 'floor']) {
    let root = null
    let counting = false
    const counts = { macrosteps: 0, microsteps: 0, actions: 0, spawned: 0 }
    const inspect = (event) => {
      if (event.type === '@xstate.actor') {
        root ??= event.actorRef // the agent's own actor is the first one created
        if (counting) counts.spawned++
        return
      }
      if (!counting || event.actorRef !== root) return
      if (event.type === '@xstate.event') counts.macrosteps++
      else if (event.type === '@xstate.microstep') counts.microsteps++
      else if (event.type === '@xstate.action') counts.actions++
    }
    const api = which === 'lib'
      ? lib.createPlanMode({ section: SECTION, inspect })
      : createFloorPlanMode({ section: SECTION, foldPlanMode: lib.foldPlanMode, inspect })
    const agent = { id: `counted-${which}`, session: lib.createMemorySessionLog(realisticEntries(1000)) }
    const side = sideOf(api, agent, api.get(agent).active)
    if (shape === 'flush') await queueFlip(side)
    counting = true
    if (shape === 'flip') await queueFlip(side)
    await boundaryStep(side)
    counting = false
    await api.dispose?.()
    counted[which] = counts
  }
  return counted
}

/**
 * Runs a side's operations for `ms` under the CPU profiler (hooks included, as in the suite).
 * @returns {Promise<{ profile: object, ops: number }>}
 */
async function cpuProfile(session, side, ms) {
  await session.post('Profiler.enable')
  await session.post('Profiler.setSamplingInterval', { interval: SAMPLING_US })
  await session.post('Profiler.start')
  const start = performance.now()
  let ops = 0
  while (performance.now() - start < ms || ops < 2) {
    if (side.before) await benchUntimed(side.before)
    await side.run()
    if (side.after) await benchUntimed(side.after)
    ops++
  }
  const { profile } = await session.post('Profiler.stop')
  await session.post('Profiler.disable')
  return { profile, ops }
}

/** An empty accumulator of CPU profiles of one side. */
function cpuTotals() {
  return { ops: 0, excludedUs: 0, functions: new Map() }
}

/**
 * Adds a CPU profile to a side's totals: self time by function, leaving out the synchronous work
 * of the untimed hooks (every frame under `benchUntimed`) and idle time.
 */
function addCpu(totals, { profile, ops }) {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]))
  const parent = new Map()
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id)
  const untimed = new Map()
  const isUntimed = (id) => {
    if (!untimed.has(id)) {
      const up = parent.get(id)
      untimed.set(id, byId.get(id).callFrame.functionName === 'benchUntimed' || (up !== undefined && isUntimed(up)))
    }
    return untimed.get(id)
  }
  totals.ops += ops
  for (let i = 0; i < profile.samples.length; i++) {
    // A sample stands for the time until the next one.
    const dt = profile.timeDeltas[i + 1] ?? SAMPLING_US
    const id = profile.samples[i]
    if (isUntimed(id)) {
      totals.excludedUs += dt
      continue
    }
    const frame = byId.get(id).callFrame
    const category = categoryOf(frame)
    if (category === 'idle') continue
    const where = locate(frame)
    const key = `${frame.functionName}|${where}`
    const entry = totals.functions.get(key) ?? { fn: frame.functionName || '(anonymous)', where, category, us: 0 }
    entry.us += dt
    totals.functions.set(key, entry)
  }
}

/**
 * A side's totals per operation: µs by category, the top functions by self time.
 * @returns {{ ops: number, sampledUs: number, excludedUs: number, categories: Record<string, number>, top: object[] }}
 */
function summarizeCpu({ ops, excludedUs, functions }) {
  const categories = {}
  let sampledUs = 0
  for (const { category, us } of functions.values()) {
    sampledUs += us
    categories[category] = (categories[category] ?? 0) + us / ops
  }
  const top = [...functions.values()]
    .sort((x, y) => y.us - x.us)
    .slice(0, 12)
    .map(({ fn, where, category, us }) => ({ fn, where, category, perOpUs: us / ops, share: us / sampledUs }))
  return { ops, sampledUs: sampledUs / ops, excludedUs: excludedUs / ops, categories, top }
}

/**
 * Makes a side's agents under the sampling heap profiler and keeps what survives two full
 * collections: the bytes each agent retains, by where they were allocated.
 */
async function heapProfile(session, makeSide, count) {
  const side = makeSide(count) // the library's logs are made here, before sampling starts
  globalThis.gc()
  await session.post('HeapProfiler.enable')
  await session.post('HeapProfiler.startSampling', { samplingInterval: HEAP_SAMPLING_BYTES })
  await side.make() // synchronous for the memory suite's sides, asynchronous for the lru suite's
  globalThis.gc()
  globalThis.gc()
  const { profile } = await session.post('HeapProfiler.getSamplingProfile')
  await session.post('HeapProfiler.stopSampling')
  await session.post('HeapProfiler.disable')
  side.check()
  await side.teardown()
  const categories = {}
  const functions = new Map()
  let total = 0
  const walk = (node) => {
    if (node.selfSize > 0) {
      const frame = node.callFrame
      const category = categoryOf(frame)
      const where = locate(frame)
      total += node.selfSize
      categories[category] = (categories[category] ?? 0) + node.selfSize / count
      const key = `${frame.functionName}|${where}`
      const entry = functions.get(key) ?? { fn: frame.functionName || '(anonymous)', where, category, bytes: 0 }
      entry.bytes += node.selfSize
      functions.set(key, entry)
    }
    for (const child of node.children ?? []) walk(child)
  }
  walk(profile.head)
  const top = [...functions.values()]
    .sort((x, y) => y.bytes - x.bytes)
    .slice(0, 12)
    .map(({ fn, where, category, bytes }) => ({ fn, where, category, perAgent: bytes / count, share: bytes / total }))
  return { count, perAgent: total / count, categories, top }
}

/** Where a frame's code lives, for grouping. */
function categoryOf({ url, functionName }) {
  if (functionName === '(garbage collector)') return 'GC'
  if (functionName === '(program)') return 'V8 (program)'
  if (functionName === '(idle)') return 'idle'
  if (functionName === '(root)') return 'V8 (program)'
  if (url.includes('/node_modules/xstate/')) return 'xstate'
  if (url.startsWith(LIB_DIR)) return 'plan-mode library'
  if (url.includes('/bench/')) return 'bench (floor chart, harness)'
  if (url.startsWith('node:')) return 'node internals'
  return 'V8 builtins, native'
}

const sourceMaps = new Map()

/**
 * A frame's location for the report: the library's built code mapped back to `src/` through its
 * source map, xstate's as its `dist` file, the rest as a short path.
 */
function locate({ url, lineNumber, columnNumber }) {
  if (!url) return ''
  if (url.startsWith(LIB_DIR)) {
    const file = fileURLToPath(url)
    if (!sourceMaps.has(file)) {
      let map = null
      try {
        map = new SourceMap(JSON.parse(readFileSync(`${file}.map`, 'utf8')))
      } catch {
        // No map (a BENCH_LIB build without one): the built file's line is shown instead.
      }
      sourceMaps.set(file, map)
    }
    const entry = sourceMaps.get(file)?.findEntry(lineNumber, columnNumber)
    if (entry?.originalSource) {
      const source = entry.originalSource.replace(/^.*?(?=src\/)/, '')
      return `${source}:${entry.originalLine + 1}`
    }
  }
  const short = url.includes('/node_modules/')
    ? url.replace(/^.*\/node_modules\//, '')
    : url.replace(/^.*\/(bench|dist)\//, '$1/').replace(/^.*\/\.dist\//, 'dist/')
  return `${short}:${lineNumber + 1}`
}

/**
 * Profiles one case: both sides, one after the other, each warmed first.
 * @param {string} name
 * @returns {Promise<object>} labels, per-side summaries, and counts where the case has them
 */
export async function profileCase(name) {
  const lib = await loadLibrary()
  const started = performance.now()
  const spec = await setUp(lib, name)
  const session = new Session()
  session.connect()
  const sides = {}
  if (spec.kind === 'cpu') {
    // Warm both sides the way the suite runs them, then profile each.
    await interleave(
      Object.fromEntries(Object.entries(spec.sides).map(([k, s]) => [k, { ...s, samples: Math.max(3, Math.min(s.samples, 200)) }])),
      { rounds: 2 },
    )
    // A throwaway profile first: starting the profiler recompiles code, which must not land on
    // whichever side is profiled first. Then the sides alternate in slices, as in the suites.
    for (const side of Object.values(spec.sides)) await cpuProfile(session, side, 100)
    const totals = Object.fromEntries(Object.keys(spec.sides).map((key) => [key, cpuTotals()]))
    const keys = Object.keys(spec.sides)
    for (let slice = 0; slice < PROFILE_SLICES; slice++) {
      for (const key of slice % 2 === 0 ? keys : [...keys].reverse()) {
        addCpu(totals[key], await cpuProfile(session, spec.sides[key], PROFILE_MS / PROFILE_SLICES))
      }
    }
    for (const key of keys) sides[key] = summarizeCpu(totals[key])
  } else {
    for (const make of Object.values(spec.warmSides ?? spec.sides)) {
      const warm = make(spec.warmCount ?? 2_000)
      await warm.make()
      await warm.teardown()
    }
    for (const [key, make] of Object.entries(spec.sides)) sides[key] = await heapProfile(session, make, spec.count ?? HEAP_AGENTS)
  }
  session.disconnect()
  return {
    case: name,
    kind: spec.kind,
    labels: spec.labels,
    columns: spec.columns ?? ['Library', 'Floor'],
    sides,
    counts: spec.counts,
    samplingUs: SAMPLING_US,
    heapSamplingBytes: HEAP_SAMPLING_BYTES,
    profileMs: PROFILE_MS,
    seconds: (performance.now() - started) / 1000,
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const name = process.argv[2]
  const result = await profileCase(name)
  if (process.send) process.send(result, () => process.exit(0))
  else process.stdout.write(`${JSON.stringify(result, null, 2)}\n`)
}
