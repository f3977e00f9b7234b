/**
 * Realistic session logs for the benchmarks: mostly events plan mode does not care about
 * (messages, tool calls and results), a turn/start and turn/end per turn, a request/header per
 * step, and now and then a `plan/mode` flip or a `/plan` command. Deterministic (seeded), so
 * every run and every side of a comparison folds the same events.
 */

/** A small seeded PRNG (mulberry32): the same seed gives the same log on every run. */
function random(seed) {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

const TEXTS = [
  'Let me look at the failing test first.',
  'The config loader reads the file twice; I will cache it.',
  'Done. The suite passes now.',
  'Can you also update the changelog?',
]
const TOOLS = ['read_file', 'grep', 'run_tests', 'edit_file']

/**
 * Yields the `{ type, data }` entries of a log of exactly `length` events that ends inside an
 * open turn (so a user selection queues for the next boundary, R9). Payloads are fresh objects
 * per event, as a real log's are; strings are shared.
 * @param {number} length
 * @param {number} [seed]
 * @returns {Generator<{ type: string, data: unknown }>}
 */
export function* realisticEntries(length, seed = 1) {
  const next = random(seed)
  let emitted = 0
  let open = false
  let active = false
  let call = 0
  const take = function* (type, data) {
    if (emitted >= length) return
    emitted++
    // The very last event opens a turn if the log would otherwise end idle.
    const closed = type === 'turn/end' || (!open && type !== 'turn/start')
    if (emitted === length && closed) {
      open = true
      yield { type: 'turn/start', data: { trigger: 'user' } }
      return
    }
    if (type === 'turn/start') open = true
    if (type === 'turn/end') open = false
    yield { type, data }
  }
  while (emitted < length) {
    // Between turns, about one in 40: the user flips the mode, by `/plan` or directly.
    if (next() < 0.025) {
      const id = `cmd-${call++}`
      yield* take('command/run', { commandId: id, name: 'plan', args: active ? 'off' : '' })
      yield* take('command/done', { commandId: id, kind: 'success' })
      active = !active
      yield* take('plan/mode', { active })
    }
    yield* take('turn/start', { trigger: 'user' })
    yield* take('message', { role: 'user', text: TEXTS[3] })
    const steps = 1 + Math.floor(next() * 6)
    for (let step = 0; step < steps; step++) {
      yield* take('step/start', { step })
      yield* take('request/header', { model: 'm-1', step })
      yield* take('message', { role: 'assistant', text: TEXTS[Math.floor(next() * 3)] })
      const tools = Math.floor(next() * 4)
      for (let t = 0; t < tools; t++) {
        const id = `call-${call++}`
        yield* take('tool/call', { id, name: TOOLS[t], args: { path: 'src/config.ts' } })
        yield* take('tool/result', { id, ok: true, text: TEXTS[2] })
      }
    }
    yield* take('turn/end', { reason: 'stop' })
  }
}

/**
 * Counts the event types of a log, for the report.
 * @param {readonly { type: string }[]} events
 * @returns {Record<string, number>}
 */
export function typeMix(events) {
  const counts = {}
  for (const { type } of events) counts[type] = (counts[type] ?? 0) + 1
  return counts
}

/**
 * A cheaper log for the longest attach measurements (1e7 events): the realistic mix of
 * `realisticEntries`, generated once as a block and repeated, so its payload objects are shared
 * between copies. Fine where both sides of a comparison read the same array (attach against a
 * fold): they see the same events either way, and it keeps 1e7 events to a few seconds and a few
 * hundred MiB (fresh payloads take about 11 s and 1.3 GiB). The log ends inside an open turn,
 * as `realisticEntries`' does.
 * @param {number} length
 * @param {number} [block] events per repeated block
 * @returns {Generator<{ type: string, data: unknown }>}
 */
export function* repeatedEntries(length, block = 10_000) {
  // A block that ends idle (cut after its last turn/end), so copies join turn to turn.
  const template = [...realisticEntries(block)]
  template.length = template.findLastIndex((entry) => entry.type === 'turn/end') + 1
  const open = { type: 'turn/start', data: { trigger: 'user' } }
  for (let emitted = 0; emitted < length - 1; emitted++) yield template[emitted % template.length]
  if (length > 0) yield open
}
