/**
 * Suite 2 (R64, R71): attach throughput. `createPlanMode(...).get(agent)` on a fresh service
 * (replay, actor creation, subscription) against a bare `foldPlanMode` loop over the same array,
 * plus the library's `replayPlanLog` alone, which tells the replay from the actor's set-up.
 */
import { realisticEntries } from '../log.mjs'
import { QUICK, measure } from '../harness.mjs'
import { SECTION } from '../steps.mjs'

/** Rounds of measurements; every figure is the lowest of its rounds' medians. */
const ROUNDS = QUICK ? 1 : 5

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
    const attachOnce = () => {
      const pm = lib.createPlanMode({ section: SECTION })
      services.push(pm)
      return pm.get(agent)
    }
    const disposeAll = () => Promise.all(services.splice(0).map((pm) => pm.dispose()))
    let sink = false
    // Interleaved rounds, each figure the best round's median, as in suite 1: on a shared
    // machine a round that ran beside another process is slower for reasons not in the code.
    const rounds = { attach: [], fold: [], replay: [] }
    for (let round = 0; round < ROUNDS; round++) {
      rounds.attach.push(await measure(attachOnce, { ...options, afterEach: disposeAll }))
      rounds.fold.push(await measure(() => (sink = lib.foldPlanMode(events) !== sink), options))
      rounds.replay.push(await measure(() => (sink = lib.replayPlanLog(events).openTurn !== sink), options))
    }
    const [attach, fold, replay] = [rounds.attach, rounds.fold, rounds.replay].map(bestRound)
    rows.push({ n, attach, fold, replay })
  }
  return { rows }
}

/** The round with the lowest median, its mean kept beside it. */
function bestRound(measurements) {
  return measurements.reduce((best, m) => (m.p50 < best.p50 ? m : best))
}
