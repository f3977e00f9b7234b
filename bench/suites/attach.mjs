/**
 * Suite 2 (R64, R71): attach throughput. `createPlanMode(...).get(agent)` on a fresh service
 * (replay, actor creation, subscription) against a bare `foldPlanMode` loop over the same array,
 * plus the library's `replayPlanLog` alone, which tells the replay from the actor's set-up.
 */
import { realisticEntries } from '../log.mjs'
import { QUICK, measure } from '../harness.mjs'
import { SECTION } from '../steps.mjs'

/**
 * Runs suite 2.
 * @param {typeof import('../../dist/index.js')} lib
 * @returns {Promise<{ rows: object[] }>} rows per log length
 */
export async function run(lib) {
  const lengths = QUICK ? [1e5] : [1e5, 1e6]
  const rows = []
  for (const n of lengths) {
    const session = lib.createMemorySessionLog(realisticEntries(n))
    const agent = { id: 'agent', session }
    const events = session.events
    const options = { iterations: n >= 1e6 ? 12 : 32, warmupIterations: 4 }

    // A fresh service per iteration; disposed untimed, so no subscription piles up on the log.
    const services = []
    const attach = await measure(
      () => {
        const pm = lib.createPlanMode({ section: SECTION })
        services.push(pm)
        return pm.get(agent)
      },
      { ...options, afterEach: () => Promise.all(services.splice(0).map((pm) => pm.dispose())) },
    )
    let sink = false
    const fold = await measure(() => (sink = lib.foldPlanMode(events) !== sink), options)
    const replay = await measure(() => (sink = lib.replayPlanLog(events).openTurn !== sink), options)
    rows.push({ n, attach, fold, replay })
  }
  return { rows }
}
