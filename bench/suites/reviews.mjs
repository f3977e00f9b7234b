/**
 * Suite `reviews` (R78–R80): a durable review's open + answer against the in-process review of a
 * review channel, each timed as the whole review of one agent, from the exit call to its
 * recorded approval:
 * - channel: `exitTool.execute` on a service with a `ReviewChannel` that approves at once (a
 *   resolved promise); the call resolves once the approval is recorded;
 * - durable: `exitTool.execute` on a durable service (`reviews: 'durable'`) resolves once the
 *   request is recorded, then `answerReview(agent, reviewId, approve)` resolves once the approval
 *   is recorded: two operations, two appends.
 * Each sample is a new agent on a fresh memory log holding `plan/mode {active: true}` and an open
 * turn, made untimed, on a service shared by the side (the service is the host's long-lived one).
 * Both sides end with the same state (F active, P leaving), checked before the rounds.
 */
import { QUICK, interleave } from '../harness.mjs'
import { SECTION } from '../steps.mjs'

const ROUNDS = QUICK ? 3 : 9
const SAMPLES = QUICK ? 200 : 1000
const PLAN = '# Ship the importer\n\n1. Parse the CSV.\n2. Store the rows.'
const APPROVE = { answers: [{ id: 'plan-review', selected: ['Approve'] }] }

const STRICT_LOGGER = {
  warn: (...args) => {
    throw new Error(`unexpected warning: ${args.map(String).join(' ')}`)
  },
}

/**
 * The two sides.
 * @param {typeof import('../../dist/index.js')} lib
 * @param {number} samples
 * @returns {{ sides: Record<'durable' | 'channel', import('../harness.mjs').Side & { state(): object }>, services: object[] }}
 */
export function reviewSides(lib, samples) {
  const review = { ask: () => Promise.resolve(APPROVE) }
  const channel = lib.createPlanMode({ section: SECTION, review, logger: STRICT_LOGGER })
  const durable = lib.createPlanMode({ section: SECTION, review: 'durable', logger: STRICT_LOGGER })
  let agents = 0
  const agentOf = () => {
    const session = lib.createMemorySessionLog([
      { type: 'plan/mode', data: { active: true } },
      { type: 'turn/start', data: {} },
    ])
    return { id: `agent-${++agents}`, session }
  }
  const side = (service, run) => {
    let agent = null
    return {
      before: () => {
        agent = agentOf()
        service.get(agent) // attached untimed: the host's agent is attached before its model calls the tool
      },
      run: () => run(service, agent),
      after: () => service.detach(agent), // leaves memory untimed, so the heap does not grow with the samples
      /** The state the last review left (checked before the rounds). */
      state: () => service.get(agent),
      samples,
    }
  }
  return {
    services: [channel, durable],
    sides: {
      channel: side(channel, (service, agent) => service.exitTool.execute({ plan: PLAN }, { agent })),
      durable: side(durable, async (service, agent) => {
        const { reviewId } = await service.exitTool.execute({ plan: PLAN }, { agent })
        await service.answerReview(agent, reviewId, APPROVE)
      }),
    },
  }
}

/**
 * Runs the suite.
 * @param {typeof import('../../dist/index.js')} lib
 * @returns {Promise<object>} the statistics of both sides (ns per review)
 */
export async function run(lib) {
  const { sides, services } = reviewSides(lib, SAMPLES)
  // Both sides leave the agent in the same state: F active, the approved leave pending (R47, R80).
  for (const [name, side] of Object.entries(sides)) {
    await side.before()
    await side.run()
    const state = JSON.stringify(side.state())
    if (state !== '{"active":true,"pending":false}') throw new Error(`reviews suite: the ${name} side leaves ${state}`)
    await side.after()
  }
  for (let i = 0; i < 300; i++) {
    for (const side of Object.values(sides)) {
      await side.before()
      await side.run()
      await side.after()
    }
  }
  const { channel, durable } = await interleave(sides, { rounds: ROUNDS })
  await Promise.all(services.map((service) => service.dispose()))
  return { rounds: ROUNDS, samples: SAMPLES, channel, durable }
}
