/**
 * The conformance suite for session logs (R151): what every `SessionLog` must do for plan mode
 * (§0's seq contract, R1, R62, R74), as plain async functions that throw, so any test runner can
 * call them: `await checkSessionLog(subject)`, or one test per scenario with
 * `defineSessionLogSuite(name, subject, { describe, it })` (vitest's or `node:test`'s).
 *
 * @example
 * await checkSessionLog({ persistent: true, open: (id) => openJsonlSessionLog(`${dir}/${id}.jsonl`), close: (log) => log.close() })
 */
import { createPlanMode } from '../service.js'
import type { SessionEvent, SessionLog } from '../types.js'

/** The log under test: how to open (and reopen) a session's log. */
export interface SessionLogSubject {
  /**
   * Opens the log of session `sessionId`: empty for an id not used before; for a persistent log,
   * an id written before holds the events appended to it (a restart's open).
   */
  open(sessionId: string): SessionLog | Promise<SessionLog>
  /** Releases a log `open` gave (a file lock, a listener) before the session is opened again; optional. */
  close?(log: SessionLog): void | Promise<void>
  /** Whether the log outlives its object: `open` of a written id reads its events back. */
  readonly persistent: boolean
}

/** One scenario of the suite: its name, and a check that throws an `Error` naming what broke. */
export interface SessionLogScenario {
  readonly name: string
  run(subject: SessionLogSubject): Promise<void>
}

/** The JSON data each log must give back as it was appended. */
const DATA = Object.freeze({
  text: 'quotes " \\ and a newline\nunicode: ü, 日本, 🚀',
  numbers: [0, -1, 2.5, 1e21, Number.MAX_SAFE_INTEGER],
  flags: [true, false, null],
  nested: { list: [{ a: 1 }, [2, [3]]], empty: {}, none: [] },
})

/** Throws `message` unless `condition` holds. */
function check(condition: boolean, message: string): asserts condition {
  if (!condition) throw new Error(`session log conformance: ${message}`)
}

/** A value as JSON with each object's keys sorted, for comparing and for messages: key order is no part of JSON data (a jsonb column reorders them). */
const json = (value: unknown) => JSON.stringify(value, (_key, v: unknown) => (v !== null && typeof v === 'object' && !Array.isArray(v) ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) : v))

/** Each session's id is new to the subject: persistent logs may share one store across runs. */
const newSessionId = (name: string) => `${name}-${globalThis.crypto.randomUUID()}`

/** Opens a session, runs `body`, and closes the log however `body` ends. */
async function withLog<T>(subject: SessionLogSubject, sessionId: string, body: (log: SessionLog) => Promise<T>): Promise<T> {
  const log = await subject.open(sessionId)
  try {
    return await body(log)
  } finally {
    await subject.close?.(log)
  }
}

/** The events a listener was told, and a wait for the first `count` of them (told late is fine, R74). */
function listen(log: SessionLog): { told: SessionEvent[]; heard(count: number): Promise<void>; stop(): void } {
  const told: SessionEvent[] = []
  const waiting: { count: number; resolve: () => void }[] = []
  const stop = log.subscribe((event) => {
    told.push(event)
    for (const wait of waiting.filter((w) => told.length >= w.count)) {
      waiting.splice(waiting.indexOf(wait), 1)
      wait.resolve()
    }
  })
  return {
    told,
    heard: (count) => (told.length >= count ? Promise.resolve() : new Promise<void>((resolve) => waiting.push({ count, resolve }))),
    stop: () => (typeof stop === 'function' ? stop() : undefined),
  }
}

/** The event's seq, type and data, as JSON: what the log must give back. */
const shape = (event: SessionEvent | undefined) => json(event === undefined ? undefined : { seq: event.seq, type: event.type, data: event.data })

/** Checks that `events` are `expected` (type and data), numbered from `first` one after another. */
function checkEvents(events: readonly SessionEvent[], expected: readonly { type: string; data: unknown }[], first: number, where: string): void {
  check(events.length === expected.length, `${where}: ${events.length} events, expected ${expected.length}`)
  expected.forEach((want, i) => {
    const got = events[i]
    check(shape(got) === json({ seq: first + i, type: want.type, data: want.data }), `${where}: event ${i} is ${shape(got)}, expected ${json({ seq: first + i, ...want })}`)
  })
}

/** The scenarios, in the order `checkSessionLog` runs them. */
export const SESSION_LOG_SCENARIOS: readonly SessionLogScenario[] = Object.freeze([
  {
    name: 'a new session\'s log holds no events',
    run: (subject) =>
      withLog(subject, newSessionId('empty'), async (log) => {
        check(Array.isArray(log.events) && log.events.length === 0, `a new log holds ${log.events.length} events`)
      }),
  },
  {
    name: 'appends get seq 1, 2, 3 and resolve with the event, which `events` then holds',
    run: (subject) =>
      withLog(subject, newSessionId('seq'), async (log) => {
        const written = [
          { type: 'turn/start', data: {} },
          { type: 'plan/mode', data: { active: true } },
          { type: 'message', data: DATA },
        ]
        for (const [i, { type, data }] of written.entries()) {
          const event = await log.append(type, data)
          check(shape(event) === json({ seq: i + 1, type, data }), `append ${i} resolved ${shape(event)}`)
          check(shape(log.events[log.events.length - 1]) === shape(event), `after append ${i}, the last event is ${shape(log.events.at(-1))}`)
        }
        checkEvents(log.events, written, 1, 'the log')
      }),
  },
  {
    name: 'appends called together keep their order and their seqs one after another',
    run: (subject) =>
      withLog(subject, newSessionId('together'), async (log) => {
        const written = Array.from({ length: 5 }, (_, i) => ({ type: `step/${i}`, data: { i } }))
        const events = await Promise.all(written.map(({ type, data }) => log.append(type, data)))
        checkEvents(events, written, 1, 'the appends\' answers')
        checkEvents(log.events, written, 1, 'the log')
      }),
  },
  {
    name: 'every subscriber is told each appended event once, in order',
    run: (subject) =>
      withLog(subject, newSessionId('told'), async (log) => {
        const first = listen(log)
        const second = listen(log)
        const written = [
          { type: 'a', data: 1 },
          { type: 'b', data: 'two' },
          { type: 'c', data: [3] },
        ]
        for (const { type, data } of written) await log.append(type, data)
        await Promise.all([first.heard(3), second.heard(3)])
        checkEvents(first.told, written, 1, 'the first subscriber')
        checkEvents(second.told, written, 1, 'the second subscriber')
        first.stop()
        second.stop()
      }),
  },
  {
    name: 'an unsubscribed listener is told nothing more, and one that unsubscribes while told does not stop the others',
    run: (subject) =>
      withLog(subject, newSessionId('unsubscribe'), async (log) => {
        const gone = listen(log)
        gone.stop()
        let leaving: (() => void) | undefined
        const leaver: SessionEvent[] = []
        leaving = log.subscribe((event) => {
          leaver.push(event)
          leaving?.()
        })
        const staying = listen(log)
        await log.append('a', 1)
        await log.append('b', 2)
        await staying.heard(2)
        check(gone.told.length === 0, `an unsubscribed listener was told ${gone.told.length} events`)
        check(leaver.length === 1, `a listener that unsubscribed while told was told ${leaver.length} events`)
        checkEvents(staying.told, [{ type: 'a', data: 1 }, { type: 'b', data: 2 }], 1, 'the listener that stayed')
        staying.stop()
      }),
  },
  {
    name: 'sessions are apart: one session\'s appends are not in another\'s log',
    run: async (subject) => {
      const [one, two] = [newSessionId('apart-1'), newSessionId('apart-2')]
      await withLog(subject, one, async (log) => {
        await log.append('only/one', { session: 1 })
      })
      await withLog(subject, two, async (log) => {
        check(log.events.length === 0, `another session's log holds ${log.events.length} events`)
        const event = await log.append('only/two', { session: 2 })
        check(event.seq === 1, `the other session's first append has seq ${event.seq}`)
      })
    },
  },
  {
    name: 'a reopened log holds every event with its seq and data, and appends on after them',
    run: async (subject) => {
      if (!subject.persistent) return
      const id = newSessionId('reopen')
      const written = [
        { type: 'plan/mode', data: { active: true } },
        { type: 'message', data: DATA },
      ]
      await withLog(subject, id, async (log) => {
        for (const { type, data } of written) await log.append(type, data)
      })
      await withLog(subject, id, async (log) => {
        checkEvents(log.events, written, 1, 'the reopened log')
        const next = await log.append('turn/start', {})
        check(next.seq === 3, `the reopened log's next append has seq ${next.seq}`)
      })
    },
  },
  {
    name: 'plan mode runs on it: a selection and an open durable review hold across a new service',
    run: async (subject) => {
      const id = newSessionId('plan-mode')
      const plan = '# Ship it\n\n1. Build.\n2. Release.'
      const first = createPlanMode({ section: 'Plan first.', review: 'durable', logger: { warn: () => {} } })
      let reviewId: string
      const log = await subject.open(id)
      try {
        const agent = { id, session: log }
        check((await first.set(agent, true)) === 'committed', 'set(true) on an idle agent did not commit')
        const result = await first.exitTool.execute({ plan }, { agent, callId: 'call-1' })
        check('submitted' in result, `the exit call resolved ${json(result)}`)
        reviewId = (result as { reviewId: string }).reviewId
      } finally {
        await first.dispose()
        if (subject.persistent) await subject.close?.(log)
      }
      const second = createPlanMode({ section: 'Plan first.', review: 'durable', logger: { warn: () => {} } })
      const reopened = subject.persistent ? await subject.open(id) : log
      try {
        const agent = { id, session: reopened }
        check(json(second.get(agent)) === json({ active: true }), `a new service reads ${json(second.get(agent))}`)
        const open = second.openReview(agent)
        check(open?.reviewId === reviewId && open.plan === plan && open.callId === 'call-1', `a new service reads the open review ${json(open)}`)
        check((await second.answerReview(agent, reviewId, { answers: [{ id: 'plan-review', selected: ['Approve'] }] })) === 'approved', 'the review was not approved')
      } finally {
        await second.dispose()
        await subject.close?.(reopened)
      }
    },
  },
])

/**
 * Runs every scenario on `subject`, one after another.
 * @throws (rejects) the first scenario's failure, its message prefixed with the scenario's name.
 */
export async function checkSessionLog(subject: SessionLogSubject): Promise<void> {
  for (const scenario of SESSION_LOG_SCENARIOS) {
    try {
      await scenario.run(subject)
    } catch (error) {
      throw new Error(`${scenario.name}: ${error instanceof Error ? error.message : String(error)}`, { cause: error })
    }
  }
}

/** A test runner's `describe` and `it` (vitest's, `node:test`'s). */
export interface SessionLogRunner {
  describe(name: string, body: () => void): unknown
  it(name: string, body: () => Promise<void>): unknown
}

/** One test per scenario, titled `R151: <scenario>`, under `describe(name)`, with the runner given. */
export function defineSessionLogSuite(name: string, subject: SessionLogSubject, { describe, it }: SessionLogRunner): void {
  describe(name, () => {
    for (const scenario of SESSION_LOG_SCENARIOS) it(`R151: ${scenario.name}`, () => scenario.run(subject))
  })
}
