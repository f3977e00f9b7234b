/**
 * Suite `memory`: idle attached agents against bare started actors of the library's chart.
 * - library: AGENTS agents with a 24-event log each, attached to one service by one `get` each
 *   and left idle; their logs exist before the first reading, so only what attaching adds counts;
 * - floor: AGENTS actors `createActor(planModeMachine).start()`, held in an array.
 * Memory is the growth of `heapUsed` after full collections (`global.gc()`, so this suite runs
 * with `--expose-gc`, as every suite does), divided by AGENTS. The two sides alternate over
 * ROUNDS rounds, everything of a round let go before the next.
 */
import { createActor } from 'xstate'
import { realisticEntries } from '../log.mjs'
import { QUICK, heapGrowth, measuredValidly, nowNs, percentile, settledHeap, stats } from '../harness.mjs'
import { SECTION } from '../steps.mjs'

export const AGENTS = QUICK ? 2_000 : 10_000
const ROUNDS = QUICK ? 2 : 5
/** A small log: a turn or two of an agent that has just started. */
export const LOG_LENGTH = 24

/**
 * The two sides, each a function that makes `count` idle agents (or actors) after `before()`
 * and returns what keeps them alive plus a teardown. Shared with bench/profile.mjs.
 * @param {typeof import('../../dist/index.js')} lib
 */
export function memorySides(lib) {
  return {
    /** Idle attached agents: the logs are made before the reading, attaching after it. */
    library: (count) => {
      const agents = Array.from({ length: count }, (_, i) => agentOf(lib, `agent-${i}`))
      const service = lib.createPlanMode({ section: SECTION })
      service.get(agentOf(lib, 'first')) // the service's own one-time set-up is not an agent's cost
      return {
        agents,
        make: () => {
          for (const agent of agents) service.get(agent)
        },
        check: () => {
          // Still attached and idle when measured: every agent answers without a new attach.
          if (service.get(agents[count - 1]).active !== false) throw new Error('unexpected state')
        },
        teardown: () => service.dispose(),
      }
    },
    /** Bare started actors of the chart, nothing bound, no log. */
    floor: (count) => {
      const actors = []
      createActor(lib.planModeMachine).start().stop() // the same one-time set-up, outside the reading
      return {
        agents: actors,
        make: () => {
          for (let i = 0; i < count; i++) actors.push(createActor(lib.planModeMachine).start())
        },
        check: () => {
          if (actors.length !== count) throw new Error('actors went missing')
        },
        teardown: () => {
          for (const actor of actors) actor.stop()
        },
      }
    },
  }
}

/**
 * Measures one side once: bytes per agent, and the wall time of making them.
 * @returns {Promise<{ bytes: number, ns: number }>}
 */
async function measureOnce(makeSide, count) {
  const side = makeSide(count)
  const before = settledHeap()
  const start = nowNs()
  side.make()
  const ns = (nowNs() - start) / count
  const after = settledHeap()
  side.check()
  await side.teardown()
  const [grown] = heapGrowth(before, [after], 'memory suite')
  return { bytes: grown / count, ns }
}

/**
 * Runs the suite.
 * @param {typeof import('../../dist/index.js')} lib
 * @returns {Promise<object>} bytes per agent per side, over the rounds
 */
export async function run(lib) {
  const sides = memorySides(lib)
  // A round whose reading fell below its start is measured again, once (counted, reported).
  const retried = { count: 0 }
  // Warm-up: code compiled during a reading would otherwise count as memory of the agents.
  for (const make of Object.values(sides)) await measuredValidly(() => measureOnce(make, 2_000), retried)
  const taken = { library: [], floor: [] }
  const times = { library: [], floor: [] }
  for (let round = 0; round < ROUNDS; round++) {
    const order = round % 2 === 0 ? ['library', 'floor'] : ['floor', 'library']
    for (const name of order) {
      const { bytes, ns } = await measuredValidly(() => measureOnce(sides[name], AGENTS), retried)
      taken[name].push(bytes)
      times[name].push(ns)
    }
  }
  return {
    agents: AGENTS,
    logLength: LOG_LENGTH,
    rounds: ROUNDS,
    heapRetries: retried.count,
    library: stats(taken.library, taken.library.map((bytes) => [bytes])),
    floor: stats(taken.floor, taken.floor.map((bytes) => [bytes])),
    makeNs: { library: percentile(times.library, 0.5), floor: percentile(times.floor, 0.5) },
  }
}

function agentOf(lib, id) {
  return { id, session: lib.createMemorySessionLog(realisticEntries(LOG_LENGTH, id.length)) }
}
