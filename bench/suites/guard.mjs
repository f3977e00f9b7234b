/**
 * Suite `guard` (R88–R91): what the opt-in guard adds to a tool call it records. An agent in plan
 * mode (attached untimed) calls a side-effecting tool; both sides end with the tool's result and
 * one `plan/violation` appended to their agent's memory log:
 * - guarded: `guard.run(agent, call, execute)` with `action: 'observe'` (reads the state in force,
 *   appends the record, runs the tool);
 * - floor: the same tool called without a guard, plus one `session.append` of the same record,
 *   built from the call as a host that records it by hand must (a record names its call: one object
 *   per call, which the log keeps; a constant object would leave the record's allocation, and the
 *   heap it adds to the log, on the guarded side alone: 1.4× in CPU time per call, where the guarded
 *   call costs 0.93–0.98× the floor that builds its record).
 * The tool is an async function that returns at once, so the ratio shows the guard's own cost, not
 * a tool's. A memory log keeps the append at ~100 ns: a database or file log adds the same time to
 * both sides.
 */
import { LIB_URL, QUICK, interleave } from '../harness.mjs'
import { SECTION } from '../steps.mjs'

const ROUNDS = QUICK ? 3 : 9
const SAMPLES = QUICK ? 2_000 : 20_000
const RECORD = { tool: 'write_file', callId: 'call-1', action: 'observed' }

/**
 * The two sides, on one service with both agents attached (every append to an attached agent's
 * log passes the service's filter, R70, whoever appends it).
 * @param {typeof import('../../dist/index.js')} lib
 * @param {number} samples
 */
export async function guardSides(lib, samples) {
  const { createPlanGuard } = await import(new URL('./guard.js', LIB_URL).href)
  const planMode = lib.createPlanMode({ section: SECTION })
  const agentOf = (id) => ({ id, session: lib.createMemorySessionLog([{ type: 'plan/mode', data: { active: true } }]) })
  const guarded = agentOf('guarded')
  const bare = agentOf('bare')
  planMode.get(guarded)
  planMode.get(bare)
  const guard = createPlanGuard({ planMode, action: 'observe' })
  const writeFile = async (input) => input.path.length
  const input = { path: 'src/app.ts' }
  const call = { tool: 'write_file', callId: 'call-1', readOnly: false }
  return {
    planMode,
    agents: { guarded, floor: bare },
    sides: {
      guarded: { run: () => guard.run(guarded, call, () => writeFile(input)), samples },
      floor: {
        run: async () => {
          const result = await writeFile(input)
          bare.session.append('plan/violation', { tool: call.tool, callId: call.callId, action: 'observed' })
          return result
        },
        samples,
      },
    },
  }
}

/**
 * Runs the suite.
 * @param {typeof import('../../dist/index.js')} lib
 * @returns {Promise<object>} the statistics of both sides (ns per call)
 */
export async function run(lib) {
  const { planMode, agents, sides } = await guardSides(lib, SAMPLES)
  // Both sides do the same: the tool's result, and one record per call.
  for (const [name, side] of Object.entries(sides)) {
    const { session } = agents[name]
    const before = session.events.length
    if ((await side.run()) !== 10) throw new Error(`guard suite: the ${name} side lost the tool's result`)
    const last = session.events.at(-1)
    if (session.events.length !== before + 1 || last.type !== 'plan/violation' || JSON.stringify(last.data) !== JSON.stringify(RECORD)) {
      throw new Error(`guard suite: the ${name} side did not append exactly one record`)
    }
  }
  const result = await interleave(sides, { rounds: ROUNDS })
  await planMode.dispose()
  return { rounds: ROUNDS, samples: SAMPLES, guarded: result.guarded, floor: result.floor }
}
