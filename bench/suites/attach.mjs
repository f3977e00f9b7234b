/**
 * Suite `attach`: replaying a long log. `createPlanMode(config).get(agent)` on a fresh service
 * (replay, actor, subscription; the service is disposed after each sample, untimed) against a
 * warm `foldPlanMode` over the same array, in interleaved rounds.
 *
 * Logs: 1e6 events of the realistic mix (fresh payload objects per event, as a real log has),
 * and 1e6 and 1e7 events of the cheaper repeated mix (bench/log.mjs `repeatedEntries`: payload
 * objects shared between copies of a block), because the realistic generator needs about 11 s
 * and 1.3 GiB for 1e7 events. Both sides read the same array, so the comparison holds on either;
 * the two 1e6 rows show what the generator changes.
 */
import { realisticEntries, repeatedEntries } from '../log.mjs'
import { QUICK, interleave, opaque } from '../harness.mjs'
import { SECTION } from '../steps.mjs'

const ROUNDS = QUICK ? 3 : 7

/**
 * The logs measured: length, generator, samples per round (about 100 ms of work per side), and
 * whether the row is one of the targets (1e6 and 1e7 events; the shared 1e6 row shows
 * what the cheaper generator changes).
 */
export const LOGS = QUICK
  ? [
      { n: 1e5, payloads: 'fresh', samples: 20, target: true },
      { n: 1e6, payloads: 'shared', samples: 4, target: true },
    ]
  : [
      { n: 1e6, payloads: 'fresh', samples: 12, target: true },
      { n: 1e6, payloads: 'shared', samples: 16, target: false },
      { n: 1e7, payloads: 'shared', samples: 3, target: true },
    ]

/**
 * A memory log of n events.
 * @param {typeof import('../../dist/index.js')} lib
 * @param {number} n
 * @param {'fresh' | 'shared'} payloads
 */
export function logOf(lib, n, payloads) {
  return lib.createMemorySessionLog(payloads === 'fresh' ? realisticEntries(n) : repeatedEntries(n))
}

/**
 * The two sides of an attach comparison on one log.
 * @param {typeof import('../../dist/index.js')} lib
 * @param {{ id: string, session: object }} agent
 * @param {number} samples
 * @returns {{ attach: import('../harness.mjs').Side, fold: import('../harness.mjs').Side }}
 */
export function attachSides(lib, agent, samples) {
  const events = agent.session.events
  let service = null
  let sink = false
  return {
    attach: {
      run: () => {
        service = lib.createPlanMode({ section: SECTION })
        sink = service.get(agent).active !== sink
      },
      // A fresh service per sample, disposed untimed, so no subscription piles up on the log.
      after: () => service.dispose(),
      samples,
    },
    // Through `opaque`, so that a profile of this side names `foldPlanMode`, not this arrow.
    fold: { run: () => (sink = opaque(lib.foldPlanMode, events) !== sink), samples },
  }
}

/**
 * Runs the suite.
 * @param {typeof import('../../dist/index.js')} lib
 * @returns {Promise<{ rows: object[], rounds: number }>} per log, the statistics of both sides (ns)
 */
export async function run(lib) {
  const rows = []
  for (const { n, payloads, samples, target } of LOGS) {
    const built = performance.now()
    const agent = { id: 'agent', session: logOf(lib, n, payloads) }
    const buildSeconds = (performance.now() - built) / 1000
    const sides = attachSides(lib, agent, samples)
    // Warm: both sides run a few times before the rounds (and twice more at each round's start).
    for (let i = 0; i < 3; i++) {
      await sides.fold.run()
      await sides.attach.run()
      await sides.attach.after()
    }
    const { attach, fold } = await interleave(sides, { rounds: ROUNDS })
    rows.push({ n, payloads, target, attach, fold, buildSeconds })
  }
  return { rows, rounds: ROUNDS }
}
