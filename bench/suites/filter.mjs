/**
 * Suite `filter` (reported, not a target): what an appended event that cannot matter to plan
 * mode costs once an agent is attached. The same appends to a memory log with the agent attached (its subscription runs the
 * filter before the actor) and to one with no agent attached; the difference is the filter's
 * cost. The two sides run in small interleaved chunks (order swapped every chunk), because an
 * append is ~100 ns and GC and JIT drift between two long runs would be larger than the
 * difference measured.
 */
import { realisticEntries } from '../log.mjs'
import { QUICK, median, nowNs } from '../harness.mjs'
import { SECTION } from '../steps.mjs'
const CHUNK = 10_000
const CHUNKS_PER_LOG = 10
const LOGS = QUICK ? 2 : 8

/** The irrelevant events a busy agent appends most: messages, tool calls and their results. */
const IRRELEVANT = ['message', 'tool/call', 'tool/result', 'step/start']

/**
 * Runs the suite.
 * @param {typeof import('../../dist/index.js')} lib
 * @returns {Promise<object>} ns per appended event, attached and not, and their difference
 */
export async function run(lib) {
  const attached = []
  const bare = []
  const differences = []
  // Log 0 warms both paths up and is not reported.
  for (let log = 0; log <= LOGS; log++) {
    const withAgent = lib.createMemorySessionLog(realisticEntries(1000))
    const agent = { id: 'agent', session: withAgent }
    const pm = lib.createPlanMode({ section: SECTION })
    pm.get(agent) // attach: from now on it follows the log
    const without = lib.createMemorySessionLog(realisticEntries(1000))
    for (let chunk = 0; chunk < CHUNKS_PER_LOG; chunk++) {
      let a, b
      if (chunk % 2 === 0) {
        a = appendChunk(withAgent)
        b = appendChunk(without)
      } else {
        b = appendChunk(without)
        a = appendChunk(withAgent)
      }
      if (log > 0) {
        attached.push(a)
        bare.push(b)
        differences.push(a - b)
      }
    }
    if (pm.get(agent).active !== false) throw new Error('F moved on irrelevant events')
    if (withAgent.events.length !== 1000 + CHUNK * CHUNKS_PER_LOG) throw new Error('appends went missing')
    await pm.dispose()
  }
  return {
    appendsPerSide: attached.length * CHUNK,
    chunk: CHUNK,
    attachedNs: median(attached),
    bareNs: median(bare),
    differenceNs: median(differences),
  }
}

/** Appends CHUNK irrelevant events (fresh payloads, as a host's are) and returns ns per event. */
function appendChunk(session) {
  const start = nowNs()
  for (let i = 0; i < CHUNK; i++) session.append(IRRELEVANT[i & 3], { text: 'tool output', i })
  return (nowNs() - start) / CHUNK
}
