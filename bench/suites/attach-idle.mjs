/**
 * Suite `attach-idle`: attaching a new agent whose log is empty, `planMode.get(agent)` for an
 * agent id the service has not seen, against the floor `createActor(planModeMachine, { snapshot
 * }).start()` with the snapshot of a bare started actor of the same chart (bench/floor.mjs
 * `bareSnapshot`). The attached agents (and the floor's actors) are kept, as a host keeps its
 * agents, and let go every CHUNK samples (untimed): a fresh service, the floor's actors stopped.
 */
import { createActor } from 'xstate'
import { bareSnapshot } from '../floor.mjs'
import { QUICK, interleave } from '../harness.mjs'
import { SECTION } from '../steps.mjs'

const ROUNDS = QUICK ? 3 : 9
const SAMPLES = QUICK ? 300 : 1500
/** Agents (or actors) kept before they are let go. */
const CHUNK = 500

/**
 * The two sides of the comparison. The agents and their empty logs are made in the untimed
 * `before`, so the library's timed call is exactly the host's first `get`.
 * @param {typeof import('../../dist/index.js')} lib
 * @param {number} samples
 * @returns {{ attach: import('../harness.mjs').Side, floor: import('../harness.mjs').Side }}
 */
export function attachIdleSides(lib, samples) {
  const snapshot = bareSnapshot(lib)
  let service = lib.createPlanMode({ section: SECTION })
  let attached = 0
  let next = 0
  let agent = null
  const actors = []
  let sink = false
  return {
    attach: {
      before: () => {
        agent = { id: `agent-${next++}`, session: lib.createMemorySessionLog() }
      },
      run: () => {
        sink = service.get(agent).active !== sink
      },
      after: async () => {
        if (++attached % CHUNK !== 0) return
        await service.dispose()
        service = lib.createPlanMode({ section: SECTION })
      },
      samples,
    },
    floor: {
      run: () => {
        actors.push(createActor(lib.planModeMachine, { snapshot }).start())
      },
      after: () => {
        if (actors.length < CHUNK) return
        for (const actor of actors) actor.stop()
        actors.length = 0
      },
      samples,
    },
  }
}

/**
 * Runs the suite.
 * @param {typeof import('../../dist/index.js')} lib
 * @returns {Promise<object>} the statistics of both sides (ns per attach)
 */
export async function run(lib) {
  const sides = attachIdleSides(lib, SAMPLES)
  // Warm both paths (a few thousand attaches) before the rounds.
  for (let i = 0; i < 3000; i++) {
    for (const side of [sides.attach, sides.floor]) {
      await side.before?.()
      await side.run()
      await side.after()
    }
  }
  const { attach, floor } = await interleave(sides, { rounds: ROUNDS })
  return { attach, floor, rounds: ROUNDS, chunk: CHUNK }
}
