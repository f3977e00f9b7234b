/**
 * Suite 4: 10,000 idle attached agents. Memory per agent is the growth of the settled heap
 * (`heapUsed` after full collections) from before the agents were attached to after, divided by
 * the number of agents; their logs exist before the first reading, so only what attaching adds
 * is counted. Attach time per agent is the wall time of the attach loop, divided likewise.
 */
import { realisticEntries } from '../log.mjs'
import { QUICK, nowNs, settledHeap } from '../harness.mjs'
import { SECTION } from '../steps.mjs'
const AGENTS = QUICK ? 2_000 : 10_000
/** A small log: a turn or two of an agent that has just started. */
const LOG_LENGTH = 24

/**
 * Runs suite 4.
 * @param {typeof import('../../dist/index.js')} lib
 * @returns {Promise<object>} bytes and microseconds per agent
 */
export async function run(lib) {
  // Warm-up on other agents and another service: code compiled during the measured loop would
  // otherwise count as memory of the agents.
  {
    const pm = lib.createPlanMode({ section: SECTION })
    for (let i = 0; i < 2_000; i++) pm.get(agentOf(lib, `warm-${i}`))
    await pm.dispose()
  }
  const agents = Array.from({ length: AGENTS }, (_, i) => agentOf(lib, `agent-${i}`))
  const pm = lib.createPlanMode({ section: SECTION })
  pm.get(agentOf(lib, 'first')) // the service's own one-time set-up is not an agent's cost
  const before = settledHeap()
  const start = nowNs()
  for (const agent of agents) pm.get(agent)
  const attachNs = (nowNs() - start) / AGENTS
  const after = settledHeap()
  // Still attached and idle when measured: every agent answers without a new attach.
  if (pm.get(agents[AGENTS - 1]).active !== false) throw new Error('unexpected state')
  const bytesPerAgent = (after - before) / AGENTS
  await pm.dispose()
  return { agents: AGENTS, logLength: LOG_LENGTH, bytesPerAgent, attachUs: attachNs / 1000, heapBefore: before, heapAfter: after }
}

function agentOf(lib, id) {
  return { id, session: lib.createMemorySessionLog(realisticEntries(LOG_LENGTH, id.length)) }
}
