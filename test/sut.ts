/**
 * The system under test for the model-based and property tests: the real service
 * (`createPlanMode`) wired to ports the test controls, plus small helpers to read what it did.
 * - `ControlledLog`: a session log whose service appends land at once or a moment later, fail (a synchronous
 *   throw or an asynchronous rejection) or are held until the test publishes (subscribers are
 *   told), resolves or rejects them; the host's own appends (`hostAppend`) always land.
 * - `ControlledChannel`: a review channel whose asks wait for the test's answer.
 * - `track`: a promise's settlement, readable synchronously after the microtasks ran.
 */
import type { ReviewAnswer, ReviewChannel, ReviewRequest, SessionEvent, SessionLog, UserMessage } from '../src/index.js'

/** What the log does with one append the service makes. */
export type LogFate = 'ok' | 'async' | 'throw' | 'reject' | 'hold'

/** A held service append. */
export interface HeldLogAppend {
  readonly type: string
  readonly data: unknown
  published: SessionEvent | null
  settled: boolean
  resolve(event: SessionEvent): void
  reject(error: Error): void
}

/** A session log the test controls (see the file comment). */
export interface ControlledLog extends SessionLog {
  readonly events: SessionEvent[]
  /** The fate of the service's next appends, consumed in order; afterwards `defaultFate`. */
  readonly fates: { fate: LogFate; error?: Error }[]
  defaultFate: LogFate
  readonly held: HeldLogAppend[]
  /** The host appends directly: always lands. */
  hostAppend(type: string, data: unknown): SessionEvent
  publish(held: HeldLogAppend): void
  resolveHeld(held: HeldLogAppend): void
  rejectHeld(held: HeldLogAppend, error: Error): void
  /** How many listeners are subscribed (R60: subscriptions end). */
  readonly listenerCount: number
  /** Every append the service made, with the number of events the log held then (R3: what F was). */
  readonly serviceAppends: { type: string; data: unknown; logLength: number }[]
}

/** Creates a controlled log seeded with `seed` (seq from 1). */
export function createControlledLog(seed: readonly { type: string; data: unknown }[] = []): ControlledLog {
  const events: SessionEvent[] = []
  const listeners = new Set<(event: SessionEvent) => void>()
  const land = (type: string, data: unknown): SessionEvent => {
    const event: SessionEvent = Object.freeze({ seq: events.length + 1, type, data })
    events.push(event)
    for (const listener of [...listeners]) listener(event)
    return event
  }
  for (const { type, data } of seed) events.push(Object.freeze({ seq: events.length + 1, type, data }))
  const log: ControlledLog = {
    events,
    fates: [],
    defaultFate: 'ok',
    held: [],
    serviceAppends: [],
    get listenerCount() {
      return listeners.size
    },
    subscribe(listener) {
      listeners.add(listener)
      return () => {
        listeners.delete(listener)
      }
    },
    hostAppend: land,
    append(type, data) {
      log.serviceAppends.push({ type, data, logLength: events.length })
      const next = log.fates.shift() ?? { fate: log.defaultFate }
      switch (next.fate) {
        case 'ok':
          return land(type, data)
        case 'async':
          // A database: the event lands (and subscribers hear it) a moment later, then append resolves.
          return Promise.resolve().then(() => land(type, data))
        case 'throw':
          throw next.error ?? new Error(`append of ${type} failed`)
        case 'reject':
          return Promise.reject(next.error ?? new Error(`append of ${type} rejected`))
        case 'hold':
          return new Promise<SessionEvent>((resolve, reject) => {
            log.held.push({ type, data, published: null, settled: false, resolve, reject })
          })
      }
    },
    publish(held) {
      if (!held.published) held.published = land(held.type, held.data)
    },
    resolveHeld(held) {
      log.publish(held)
      held.settled = true
      held.resolve(held.published!)
    },
    rejectHeld(held, error) {
      held.settled = true
      held.reject(error)
    },
  }
  return log
}

/** An ask the channel received. */
export interface ReceivedAsk {
  readonly request: ReviewRequest
  answered: boolean
  resolve(answer: ReviewAnswer): void
  reject(error: unknown): void
}

/** A review channel the test answers. */
export interface ControlledChannel extends ReviewChannel {
  readonly asks: ReceivedAsk[]
  /** The next ask throws this synchronously (R46). */
  throwNext: Error | null
}

/** Creates a review channel whose asks wait for the test's answer (or throw, once, when told to). */
export function createControlledChannel(): ControlledChannel {
  const channel: ControlledChannel = {
    asks: [],
    throwNext: null,
    ask(request) {
      if (channel.throwNext) {
        const error = channel.throwNext
        channel.throwNext = null
        channel.asks.push({ request, answered: true, resolve: () => {}, reject: () => {} })
        throw error
      }
      return new Promise<ReviewAnswer>((resolve, reject) => {
        const ask: ReceivedAsk = {
          request,
          answered: false,
          resolve: (answer) => {
            ask.answered = true
            resolve(answer)
          },
          reject: (error) => {
            ask.answered = true
            reject(error)
          },
        }
        channel.asks.push(ask)
      })
    },
  }
  return channel
}

/** A promise's settlement, readable synchronously. */
export interface Tracked<T> {
  promise: Promise<T>
  state: { status: 'pending' } | { status: 'resolved'; value: T } | { status: 'rejected'; error: unknown }
}

/** Tracks a promise (or a synchronous call's result or throw). */
export function track<T>(run: () => Promise<T>): Tracked<T> {
  const tracked: Tracked<T> = { promise: undefined as unknown as Promise<T>, state: { status: 'pending' } }
  let promise: Promise<T>
  try {
    promise = run()
  } catch (error) {
    promise = Promise.reject(error)
  }
  tracked.promise = promise
  promise.then(
    (value) => (tracked.state = { status: 'resolved', value }),
    (error: unknown) => (tracked.state = { status: 'rejected', error }),
  )
  return tracked
}

/** Lets every pending promise callback run (a macrotask runs after all microtasks). */
export const settle = () => new Promise<void>((resolve) => setImmediate(resolve))

/** The text of a notice, after checking its shape exactly (R34). */
export function noticeText(message: UserMessage): string {
  const text = (message.content[0] as { text?: unknown } | undefined)?.text
  if (typeof text !== 'string') throw new Error(`notice without text: ${JSON.stringify(message)}`)
  const expected = {
    id: message.id,
    role: 'user',
    content: [{ type: 'text', text }],
    source: { kind: 'plugin', plugin: 'plan-mode', form: 'notice', summary: text },
  }
  if (JSON.stringify(message) !== JSON.stringify(expected) || typeof message.id !== 'string' || message.id === '') {
    throw new Error(`R34: a notice is not shaped as a plugin notice: ${JSON.stringify(message)}`)
  }
  return text
}

/** The log as `{ type, data }` entries (seq checked to increase by one, SPEC §0). */
export function entries(log: SessionLog): { type: string; data: unknown }[] {
  log.events.forEach((event, i) => {
    if (event.seq !== i + 1) throw new Error(`seq ${event.seq} at index ${i}`)
  })
  return log.events.map(({ type, data }) => ({ type, data }))
}
