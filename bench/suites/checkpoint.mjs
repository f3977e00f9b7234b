/**
 * Suite `checkpoint` (R76): attaching a long log from a checkpoint, as a stateless host does it,
 * against attaching a short log. Three sides, interleaved in rounds, each timed as the host's
 * first `planMode.get(agent)` on a fresh service (the service is disposed after each sample,
 * untimed, as in the attach suite):
 * - tail: a 1e6-event log loaded from its checkpoint: the session is
 *   `createMemorySessionLog(tail, { checkpoint, agentId })`, the tail the event the checkpoint ends
 *   at and the last TAIL events, and the checkpoint the fold of the TOTAL − TAIL events before them;
 * - whole: the same checkpoint on a session holding the whole 1e6-event log (seq 1 to 1e6): attach
 *   must still replay only the TAIL events after the checkpoint;
 * - short: the same TAIL events as a log of their own (seq 1 to TAIL), no checkpoint: what attach
 *   of a 100-event log costs. Same events, so the sides differ only by the checkpoint and what
 *   lies before it.
 * The log is the realistic mix (bench/log.mjs `realisticEntries`, fresh payloads per event). The
 * checkpoint is built once, untimed, with the library's exported `replayPlanLog` in the shape of
 * R76 (`{ version: PLAN_CHECKPOINT_VERSION, agentId, seq, type, digest, projection, openTurn, told, review }`), and each
 * side's state is checked against a full replay before the rounds; a checkpoint the service
 * ignored would warn, and the logger given to every service throws on a warning.
 */
import { realisticEntries } from '../log.mjs'
import { QUICK, interleave } from '../harness.mjs'
import { SECTION } from '../steps.mjs'

/** The long log's length, and the tail a host loads after its checkpoint. */
export const TOTAL = QUICK ? 1e5 : 1e6
export const TAIL = 100
const ROUNDS = QUICK ? 3 : 9
const SAMPLES = QUICK ? 100 : 400

/** The agent every side attaches, whose checkpoint it is. */
const AGENT = 'agent'

/** A logger that fails the bench on any warning (a checkpoint ignored, a failed write). */
const STRICT_LOGGER = {
  warn: (...args) => {
    throw new Error(`unexpected warning: ${args.map(String).join(' ')}`)
  },
}

/**
 * The logs of the suite, built once: the whole log, its checkpoint TAIL events back, and the
 * three sessions the sides attach.
 * @param {typeof import('../../dist/index.js')} lib
 * @returns {{ whole: object, tail: object, short: object, checkpoint: object, buildSeconds: number, checkpointSeconds: number }}
 */
export function checkpointLogs(lib) {
  const built = performance.now()
  const full = lib.createMemorySessionLog(realisticEntries(TOTAL))
  const buildSeconds = (performance.now() - built) / 1000
  const events = full.events
  const cut = TOTAL - TAIL
  const folded = performance.now()
  const fold = lib.replayPlanLog(events.slice(0, cut))
  const last = events[cut - 1]
  const checkpoint = {
    version: lib.PLAN_CHECKPOINT_VERSION,
    agentId: AGENT,
    seq: last.seq,
    type: last.type,
    digest: lib.eventDigest(last),
    projection: fold.projection,
    openTurn: fold.openTurn,
    told: fold.told,
    review: fold.review,
  }
  const checkpointSeconds = (performance.now() - folded) / 1000
  const tailEntries = events.slice(cut).map(({ type, data }) => ({ type, data }))
  // What a host loads with the checkpoint: the event it ends at (checked against it), then the tail.
  const loaded = events.slice(cut - 1).map(({ type, data }) => ({ type, data }))
  return {
    // The whole log with the checkpoint beside it: a host that holds it all and still hands over
    // the checkpoint (the memory log's methods are closures, so a spread copy keeps working).
    whole: { ...full, checkpoint },
    tail: lib.createMemorySessionLog(loaded, { checkpoint, agentId: AGENT }),
    short: lib.createMemorySessionLog(tailEntries),
    checkpoint,
    buildSeconds,
    checkpointSeconds,
  }
}

/**
 * The sides of the comparison: per session, the host's first `get` on a fresh service.
 * @param {typeof import('../../dist/index.js')} lib
 * @param {ReturnType<typeof checkpointLogs>} logs
 * @param {number} samples
 * @returns {Record<'tail' | 'whole' | 'short', import('../harness.mjs').Side>}
 */
export function checkpointSides(lib, logs, samples) {
  let sink = false
  const side = (session) => {
    const agent = { id: AGENT, session }
    let service = null
    return {
      run: () => {
        service = lib.createPlanMode({ section: SECTION, logger: STRICT_LOGGER })
        sink = service.get(agent).active !== sink
      },
      // A fresh service per sample, disposed untimed, so no subscription piles up on the log.
      after: () => service.dispose(),
      samples,
    }
  }
  return { tail: side(logs.tail), whole: side(logs.whole), short: side(logs.short) }
}

/**
 * Checks that every side attaches to the state a full replay of the 1e6-event log gives (the
 * short log to the state of its own events), without a warning.
 */
async function check(lib, logs) {
  const stateOf = async (session) => {
    const service = lib.createPlanMode({ section: SECTION, logger: STRICT_LOGGER })
    const state = JSON.stringify(service.get({ id: AGENT, session }))
    await service.dispose()
    return state
  }
  const full = await stateOf(lib.createMemorySessionLog(logs.whole.events))
  for (const name of ['tail', 'whole']) {
    const state = await stateOf(logs[name])
    if (state !== full) throw new Error(`checkpoint suite: the ${name} side attaches to ${state}, a full replay to ${full}`)
  }
  await stateOf(logs.short)
}

/**
 * Runs the suite.
 * @param {typeof import('../../dist/index.js')} lib
 * @returns {Promise<object>} the statistics of the three sides (ns per attach)
 */
export async function run(lib) {
  const logs = checkpointLogs(lib)
  await check(lib, logs)
  const sides = checkpointSides(lib, logs, SAMPLES)
  // Warm every side before the rounds (and twice more at each round's start).
  for (let i = 0; i < 200; i++) {
    for (const s of Object.values(sides)) {
      await s.run()
      await s.after()
    }
  }
  const { tail, whole, short } = await interleave(sides, { rounds: ROUNDS })
  return {
    total: TOTAL,
    tailLength: TAIL,
    rounds: ROUNDS,
    samples: SAMPLES,
    buildSeconds: logs.buildSeconds,
    checkpointSeconds: logs.checkpointSeconds,
    checkpoint: logs.checkpoint,
    tail,
    whole,
    short,
  }
}
