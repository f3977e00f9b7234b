import { describe, expect, it, vi } from 'vitest'
import { createMemorySessionLog, createPlanMode, type PendingStore, type PlanAgent, type PlanMode, type ReviewAnswer, type SessionLog } from '../src/index.js'
import { type ExitToolResult } from '../src/plan/exit-tool.js'
import { createControlledChannel, createControlledLog, settle, track } from './sut.js'
import { createQueue, takeTurn } from '../src/machines/queue.machine.js'
import type { SessionEvent } from '../src/index.js'

const APPROVE: ReviewAnswer = { answers: [{ id: 'plan-review', selected: ['Approve'] }] }
const KEEP: ReviewAnswer = { answers: [{ id: 'plan-review', selected: ['Keep planning'] }] }
const PLAN = '# Plan\n\n1. a'

describe('found by a review of the rebuilt service (each failed before its fix)', () => {
  // §1 Options: store promises "are awaited before the operation that caused them resolves".
  // At 355afab the answered review settled through a queued operation that awaited the store.
  it('R47, R64: an approval resolves the exit call only after its pending-store write landed', async () => {
    const writes: { op: string; release(): void; done: boolean }[] = []
    const store: PendingStore = {
      get: () => undefined,
      set: (_id, active) => new Promise<void>((resolve) => {
        const w = { op: `set ${active}`, done: false, release: () => { w.done = true; resolve() } }
        writes.push(w)
      }),
      delete: () => new Promise<void>((resolve) => {
        const w = { op: 'delete', done: false, release: () => { w.done = true; resolve() } }
        writes.push(w)
      }),
    }
    const log = createControlledLog([{ type: 'plan/mode', data: { active: true } }])
    const channel = createControlledChannel()
    const planMode = createPlanMode({ section: 'S', review: channel, pendingStore: store, logger: { warn() {} } })
    const agent: PlanAgent = { id: 'a', session: log }
    const call = track(() => planMode.exitTool.execute({ plan: PLAN }, { agent }))
    await settle()
    channel.asks[0]!.resolve(APPROVE) // F active: P becomes leaving, stored
    await settle()
    expect(writes.map((w) => w.op)).toEqual(['set false'])
    // The write is still in flight, yet the call has already resolved:
    expect(writes[0]!.done).toBe(false)
    expect(call.state).toEqual({ status: 'pending' }) // FAILS: { status: 'resolved', value: { approved: true } }
  })

  // REVIEW.ABORT carries no review number: a call's late abort closes whichever review is open.
  it('R46: an exit call whose signal aborts after its review was recorded does not abort the next review', async () => {
    const log = createControlledLog([{ type: 'plan/mode', data: { active: true } }])
    const channel = createControlledChannel()
    const planMode = createPlanMode({ section: 'S', review: channel, logger: { warn() {} } })
    const agent: PlanAgent = { id: 'a', session: log }
    const first = new AbortController()
    const call1 = track(() => planMode.exitTool.execute({ plan: PLAN }, { agent, signal: first.signal }))
    await settle()
    let call2: ReturnType<typeof track<ExitToolResult>> | undefined
    // The host reacts to the first review's record: it opens the next review and ends the first call's step.
    const off = log.subscribe((event) => {
      if (event.type !== 'plan/review' || call2) return
      queueMicrotask(() => {
        call2 = track(() => planMode.exitTool.execute({ plan: '# Second' }, { agent }))
        first.abort()
      })
    })
    channel.asks[0]!.resolve(KEEP)
    await settle()
    off()
    expect((call1.state as { error: Error }).error.message).toBe('The user chose to keep planning; revise the plan and present it again.')
    // The second review must still be open and its question not aborted:
    expect(channel.asks.length).toBe(2)
    expect(channel.asks[1]!.request.signal.aborted).toBe(false) // FAILS: the first call's abort closed review 2
    expect(call2!.state).toEqual({ status: 'pending' })
  })

  // R63: "An exit call made before the detach and still waiting for its turn fails with the reloaded text".
  it('R63: an exit call made while one attachment closes, still waiting when the next one is detached, fails as reloaded', async () => {
    const log = createControlledLog([{ type: 'plan/mode', data: { active: true } }])
    const channel = createControlledChannel()
    const planMode = createPlanMode({ section: 'S', review: channel, logger: { warn() {} } })
    const agent: PlanAgent = { id: 'a', session: log }
    log.defaultFate = 'hold'
    const set1 = track(() => planMode.set(agent, false)) // idle commit, held on attachment A
    planMode.detach(agent) // A closing
    const set2 = track(() => planMode.set(agent, false)) // will run on B
    const call = track(() => planMode.exitTool.execute({ plan: PLAN }, { agent })) // made while A closes
    log.rejectHeld(log.held[0]!, new Error('disk full')) // set1 fails, F stays active, A stops
    await settle()
    expect((set1.state as { error: Error }).error.message).toBe('disk full')
    expect(log.held.length).toBe(2) // set2's commit, held on attachment B
    planMode.detach(agent) // detach B: the exit call was made before this detach and still waits
    log.rejectHeld(log.held[1]!, new Error('disk full'))
    await settle()
    expect((set2.state as { error: Error }).error.message).toBe('disk full')
    expect(channel.asks.length).toBe(0) // FAILS: the review opened on attachment C
    expect((call.state as { error?: Error }).error?.message).toBe(
      'the plan-mode service was reloaded while the plan was under review; present the plan again',
    )
  })

  // A thenable that is not a Promise (its then returns undefined) is taken as an append that landed at once.
  it('R10: an append that returns a non-Promise thenable is not reported committed before it lands', async () => {
    const events: { seq: number; type: string; data: unknown }[] = []
    const listeners = new Set<(e: { seq: number; type: string; data: unknown }) => void>()
    let land: (() => void) | undefined
    const session = {
      events,
      subscribe: (l: (e: { seq: number; type: string; data: unknown }) => void) => (listeners.add(l), () => listeners.delete(l)),
      append(type: string, data: unknown) {
        return {
          then(resolve: (e: unknown) => void) {
            land = () => {
              const e = { seq: events.length + 1, type, data }
              events.push(e)
              for (const l of listeners) l(e)
              resolve(e)
            }
          },
        } as unknown as Promise<{ seq: number; type: string; data: unknown }>
      },
    }
    const planMode = createPlanMode({ section: 'S', logger: { warn() {} } })
    const agent: PlanAgent = { id: 'a', session }
    const set = track(() => planMode.set(agent, true))
    await settle()
    expect(set.state).toEqual({ status: 'pending' }) // FAILS: resolved 'committed' with nothing in the log
    land?.()
    await settle()
    expect(planMode.get(agent)).toEqual({ active: true })
  })

  it('R48: a selection made from inside the review channel\'s ask waits its turn, supersedes the review; each call gets its own result', async () => {
    const log = createMemorySessionLog([{ type: 'plan/mode', data: { active: true } }])
    const agent: PlanAgent = { id: 'a', session: log }
    let planMode!: PlanMode
    let set: ReturnType<typeof track<string>> | undefined
    planMode = createPlanMode({
      section: 'S',
      logger: { warn() {} },
      review: {
        ask() {
          // e.g. a UI channel that notices the user already typed /plan off while the dialog opened
          set = track(() => planMode.set(agent, false))
          return new Promise<ReviewAnswer>(() => {})
        },
      },
    })
    const call = track(() => planMode.exitTool.execute({ plan: '# P' }, { agent }))
    await settle()
    expect(set!.state).toEqual({ status: 'resolved', value: 'committed' })
    expect((call.state as { error?: Error }).error?.message).toBe('The user changed the plan mode directly; the review is closed.')
  })

  it('R14: an operation called right after a review opened acts within the call (§1)', async () => {
    const log = createControlledLog([{ type: 'turn/start', data: {} }])
    const channel = createControlledChannel()
    const planMode = createPlanMode({ section: 'S', review: channel, logger: { warn() {} } })
    const agent: PlanAgent = { id: 'a', session: log }
    await planMode.set(agent, true) // queued
    void planMode.exitTool.execute({ plan: '# P' }, { agent }).catch(() => {})
    expect(channel.asks.length).toBe(1) // the question is out, within the call
    await Promise.resolve()
    void planMode.stepBoundary(agent)
    expect(log.events.map((e) => e.type)).toEqual(['turn/start', 'plan/mode'])
    await settle()
  })

  it('R42, R46: exit calls in a row whose channel fails at once all settle: the first with the failure, the others refused while it is open', async () => {
    const log = createMemorySessionLog([{ type: 'plan/mode', data: { active: true } }])
    const agent: PlanAgent = { id: 'a', session: log }
    let n = 0
    const planMode = createPlanMode({
      section: 'S',
      logger: { warn() {} },
      review: { ask: () => { throw new Error(`channel down ${++n}`) } },
    })
    const calls = [1, 2, 3].map(() => track(() => planMode.exitTool.execute({ plan: '# P' }, { agent })))
    await settle()
    await new Promise((r) => setTimeout(r, 20))
    const already = 'a plan review is already open for this agent; wait for its answer'
    expect(calls.map((c) => (c.state as { error?: Error }).error?.message ?? c.state.status)).toEqual(['channel down 1', already, already])
  })

  it('R62: a log whose unsubscribe throws does not leave the agent unusable after a detach', async () => {
    const inner = createMemorySessionLog()
    const session: SessionLog = {
      get events() { return inner.events },
      append: (type, data) => inner.append(type, data),
      subscribe: (listener) => {
        const off = inner.subscribe(listener)
        return () => { off(); throw new Error('unsubscribe failed') }
      },
    }
    const planMode = createPlanMode({ section: 'S', logger: { warn() {} } })
    const agent: PlanAgent = { id: 'a', session }
    expect(await planMode.set(agent, true)).toBe('committed')
    const actor = planMode.actor(agent)
    planMode.detach(agent)
    await new Promise((r) => setTimeout(r, 10))
    expect(actor.getSnapshot().status).toBe('stopped') // FAILS: the actor is never stopped
    expect(await planMode.set(agent, false)).toBe('committed') // FAILS: rejects 'unsubscribe failed' forever
  })
})

describe('found by a second review of the rebuilt service (each failed before its fix)', () => {
  /** A pending store whose writes land 10 ms after they are made. */
  function slowStore() {
    const map = new Map<string, boolean>()
    const later = (f: () => void) => new Promise<void>((r) => setTimeout(() => (f(), r()), 10))
    const store: PendingStore = { get: (id) => map.get(id), set: (id, v) => later(() => map.set(id, v)), delete: (id) => later(() => map.delete(id)) }
    return { map, store }
  }

  it("R63, R64: a re-attach reads the pending store after the detached attachment's writes landed", async () => {
    const { map, store } = slowStore()
    const log = createMemorySessionLog([{ type: 'turn/start', data: {} }])
    const planMode = createPlanMode({ section: 'S', pendingStore: store, logger: { warn() {} } })
    const agent: PlanAgent = { id: 'a', session: log }
    const first = planMode.set(agent, true) // queued: P entering, its store write in flight
    planMode.detach(agent)
    const second = planMode.set(agent, false) // the user cancels; runs on the next attachment
    expect(await first).toBe('queued')
    expect(await second).toBe('cancelled')
    await new Promise((r) => setTimeout(r, 50))
    expect(map.get('a')).toBeUndefined()
    const restarted = createPlanMode({ section: 'S', pendingStore: store, logger: { warn() {} } })
    expect(restarted.get({ id: 'a', session: log })).toEqual({ active: false })
  })

  it('R60, R64: after await dispose(), a new service reads the pending store the old one wrote', async () => {
    const { store } = slowStore()
    const log = createMemorySessionLog([{ type: 'turn/start', data: {} }])
    const planMode = createPlanMode({ section: 'S', pendingStore: store, logger: { warn() {} } })
    const agent: PlanAgent = { id: 'a', session: log }
    const set = planMode.set(agent, true)
    await planMode.dispose()
    const next = createPlanMode({ section: 'S', pendingStore: store, logger: { warn() {} } })
    expect(next.get({ id: 'a', session: log })).toEqual({ active: false, pending: true })
    expect(await set).toBe('queued')
  })

  it('R10: a call made from inside a port (a log listener) settles after the call that was running (§1)', async () => {
    const log = createMemorySessionLog()
    const agent: PlanAgent = { id: 'a', session: log }
    const planMode = createPlanMode({ section: 'S', logger: { warn() {} } })
    const order: string[] = []
    let once = false
    log.subscribe((event) => {
      if (event.type !== 'plan/mode' || once) return
      once = true
      void planMode.set(agent, false).then((o) => order.push(`set(false) ${o}`))
    })
    void planMode.set(agent, true).then((o) => order.push(`set(true) ${o}`))
    await settle()
    expect(order).toEqual(['set(true) committed', 'set(false) committed'])
  })

  it('R10: turns: a take nested inside a running operation settles after it (§1)', async () => {
    const queue = createQueue()
    const order: string[] = []
    void takeTurn(queue, 'a', (end) => {
      void takeTurn(queue, 'a', async () => 'inner').then((v) => order.push(String(v)))
      end()
      return new Promise((r) => setTimeout(() => r('outer'), 5))
    }).then((v) => order.push(String(v)))
    await new Promise((r) => setTimeout(r, 20))
    expect(order).toEqual(['outer', 'inner'])
  })

  for (const answer of ['undefined', 'garbage'] as const) {
    it(`R17, R18: a flush whose append resolves ${answer} (the event reported later) answers under the state the log holds`, async () => {
      const events: SessionEvent[] = [{ seq: 1, type: 'turn/start', data: {} }]
      const listeners = new Set<(e: SessionEvent) => void>()
      const session = {
        events,
        subscribe: (l: (e: SessionEvent) => void) => (listeners.add(l), () => listeners.delete(l)),
        append(type: string, data: unknown) {
          const event = { seq: events.length + 1, type, data }
          events.push(event)
          setTimeout(() => listeners.forEach((l) => l(event)), 5) // a change feed, later
          return Promise.resolve(answer === 'undefined' ? undefined : { ok: true }) as unknown as Promise<SessionEvent>
        },
      }
      const planMode = createPlanMode({ section: 'S', logger: { warn() {} } })
      const agent: PlanAgent = { id: 'a', session }
      expect(await planMode.set(agent, true)).toBe('queued')
      expect((await planMode.stepBoundary(agent)).section).toBe('S')
      expect(planMode.get(agent)).toEqual({ active: true })
    })
  }
})

describe('hostile input (issue "Hardening", faults 5 and 8)', () => {
  it('R57, R62: an async steer that rejects is reported by /plan, never an unhandled rejection', async () => {
    const planMode = createPlanMode({ section: 'S', logger: { warn() {} } })
    const agent: PlanAgent = {
      id: 'a',
      session: createMemorySessionLog(),
      steer: () => Promise.reject(new Error('the chat is gone')) as unknown as void,
    }
    expect(await planMode.command.run({ agent, rawInput: 'draft the plan' })).toEqual({
      kind: 'error',
      text: 'Plan mode on. Use /plan off to leave. The plan message could not be sent: the chat is gone',
    })
    expect(planMode.get(agent)).toEqual({ active: true })
  })

  it('R37: a symbol key is an unknown key like any other', () => {
    const key = Symbol('extra')
    expect(() => createPlanMode({ section: 'S', [key]: 1 } as never)).toThrow(
      new Error('PlanModeOptions has unknown key(s) Symbol(extra) — options are { section, review?, decisions?, pendingStore?, checkpoints?, limits?, logger?, inspect? }'),
    )
  })

  it('R61: a BigInt active gets the R61 message, not a serializer error', () => {
    const planMode = createPlanMode({ section: 'S', logger: { warn() {} } })
    const agent: PlanAgent = { id: 'a', session: createMemorySessionLog([{ type: 'plan/mode', data: { active: 1n } }]) }
    expect(() => planMode.get(agent)).toThrow(new Error('plan/mode carries invalid active state 1n; expected a boolean'))
  })

  it('R8: set with an active that is not a boolean rejects with a TypeError and changes nothing', async () => {
    const planMode = createPlanMode({ section: 'S', logger: { warn() {} } })
    const agent: PlanAgent = { id: 'a', session: createMemorySessionLog() }
    for (const value of ['true', 1, null, Number.NaN, {}]) {
      await expect(planMode.set(agent, value as never)).rejects.toThrow(
        new TypeError(`plan mode set(agent, active) needs a boolean active; got ${typeof value}`),
      )
    }
    expect(agent.session.events).toEqual([])
    expect(planMode.get(agent)).toEqual({ active: false })
  })
})

describe('hostile hosts (issue "Hardening", faults 3 and 6; each failed before its fix)', () => {
  const abandoned = (ms: number) =>
    `plan-mode: the session log did not settle within ${ms} ms of a reload or detach; work in flight was abandoned`

  /** A memory log whose appends of `type` never settle (they are never written). */
  function hangingLog(hang: (type: string) => boolean): SessionLog {
    const inner = createMemorySessionLog()
    return {
      get events() {
        return inner.events
      },
      subscribe: (listener) => inner.subscribe(listener),
      append: (type, data) => (hang(type) ? new Promise<SessionEvent>(() => {}) : inner.append(type, data)),
    }
  }

  it('R73: dispose() settles although an append never settles: the selection fails with the abandoned message, one warning', async () => {
    const warnings: unknown[][] = []
    const planMode = createPlanMode({ section: 'S', limits: { closeTimeoutMs: 30 }, logger: { warn: (...args: unknown[]) => warnings.push(args) } })
    const agent: PlanAgent = { id: 'a', session: hangingLog((type) => type === 'plan/mode') }
    const selection = track(() => planMode.set(agent, true))
    await settle()
    expect(selection.state.status).toBe('pending')
    await planMode.dispose()
    await settle()
    expect(selection.state).toEqual({ status: 'rejected', error: new Error(abandoned(30)) })
    expect(warnings).toEqual([[abandoned(30), undefined]])
  })

  it('R73: detach() of an agent whose review record never settles: the exit call fails as reloaded, and the agent attaches again', async () => {
    const warnings: unknown[][] = []
    const channel = createControlledChannel()
    const planMode = createPlanMode(
      { section: 'S', review: channel, limits: { closeTimeoutMs: 20 }, logger: { warn: (...args: unknown[]) => warnings.push(args) } },
    )
    const agent: PlanAgent = { id: 'a', session: hangingLog((type) => type === 'plan/review') }
    await planMode.set(agent, true)
    const call = track(() => planMode.exitTool.execute({ plan: PLAN }, { agent }))
    await settle()
    channel.asks[0]!.resolve(APPROVE) // its record never settles
    await settle()
    planMode.detach(agent)
    await new Promise((resolve) => setTimeout(resolve, 60))
    expect(call.state).toEqual({ status: 'rejected', error: new Error('the plan-mode service was reloaded while the plan was under review; present the plan again') })
    expect(warnings).toEqual([[abandoned(20), undefined]])
    expect(planMode.get(agent)).toEqual({ active: true })
    expect(await planMode.set(agent, false)).toBe('committed')
  })

  // Found by the property tests: the registry chart was told of the settling after dispose had
  // stopped it, and XState warned on the console of an event sent to a stopped actor.
  it('R73, R60: an append a detach abandoned that settles after dispose() is told to no stopped actor (no console warning)', async () => {
    const log = createControlledLog()
    log.defaultFate = 'hold'
    const planMode = createPlanMode({ section: 'S', limits: { closeTimeoutMs: 20 }, logger: { warn() {} } })
    const agent: PlanAgent = { id: 'a', session: log }
    const first = planMode.set(agent, true).catch((error: unknown) => error) // held
    await settle()
    planMode.detach(agent)
    expect(await first).toEqual(new Error(abandoned(20)))
    await planMode.dispose()
    const consoleWarn = vi.spyOn(console, 'warn').mockImplementation(() => {})
    try {
      log.resolveHeld(log.held[0]!) // the abandoned append lands after all, after dispose
      await settle()
      expect(consoleWarn).not.toHaveBeenCalled()
    } finally {
      consoleWarn.mockRestore()
    }
  })

  // Found by the property tests: the abandoned append landed after the next attachment had
  // committed the same selection again, so the log held two identical plan/mode events (R3).
  it('R73, R3: after a detach abandoned a plan/mode append, the next selection waits for it to land and is a noop, not a second flip', async () => {
    const log = createControlledLog()
    log.defaultFate = 'hold'
    const planMode = createPlanMode({ section: 'S', limits: { closeTimeoutMs: 20 }, logger: { warn() {} } })
    const agent: PlanAgent = { id: 'a', session: log }
    const first = track(() => planMode.set(agent, true)) // held
    await settle()
    planMode.detach(agent)
    await new Promise((resolve) => setTimeout(resolve, 40)) // abandoned
    expect(first.state).toEqual({ status: 'rejected', error: new Error(abandoned(20)) })
    log.defaultFate = 'ok'
    const again = track(() => planMode.set(agent, true)) // waits for the abandoned append
    await settle()
    expect(again.state.status).toBe('pending')
    log.resolveHeld(log.held[0]!) // the abandoned append lands after all
    await settle()
    expect(again.state).toEqual({ status: 'resolved', value: 'noop' })
    expect(log.events.filter((e) => e.type === 'plan/mode').map((e) => e.data)).toEqual([{ active: true }])
  })

  it('R73: the next operation waits for an abandoned append at most another close timeout, then goes ahead on the log as it is', async () => {
    const planMode = createPlanMode({ section: 'S', limits: { closeTimeoutMs: 20 }, logger: { warn() {} } })
    let hang = true
    const inner = createMemorySessionLog()
    const session: SessionLog = {
      get events() {
        return inner.events
      },
      subscribe: (listener) => inner.subscribe(listener),
      append: (type, data) => (hang ? new Promise<SessionEvent>(() => {}) : inner.append(type, data)),
    }
    const agent: PlanAgent = { id: 'a', session }
    void planMode.set(agent, true).catch(() => {})
    await settle()
    planMode.detach(agent)
    await new Promise((resolve) => setTimeout(resolve, 40))
    hang = false
    const started = Date.now()
    expect(await planMode.set(agent, true)).toBe('committed')
    expect(Date.now() - started).toBeGreaterThanOrEqual(15)
  })

  it('R73: the default close timeout is 5000 ms', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] })
    try {
      const planMode = createPlanMode({ section: 'S', logger: { warn() {} } })
      const agent: PlanAgent = { id: 'a', session: hangingLog((type) => type === 'plan/mode') }
      const selection = track(() => planMode.set(agent, true))
      const disposal = track(() => planMode.dispose())
      await vi.advanceTimersByTimeAsync(4999)
      expect(disposal.state.status).toBe('pending')
      await vi.advanceTimersByTimeAsync(1)
      await settle()
      expect(disposal.state.status).toBe('resolved')
      expect(selection.state).toEqual({ status: 'rejected', error: new Error(abandoned(5000)) })
    } finally {
      vi.useRealTimers()
    }
  })

  it('R73: a close timeout that is not a number of milliseconds from 0 to 2147483647 is refused', () => {
    for (const value of [-1, Number.NaN, Number.POSITIVE_INFINITY, '5000', 2 ** 31]) {
      expect(() => createPlanMode({ section: 'S', limits: { closeTimeoutMs: value as never } })).toThrow(
        new TypeError(`plan mode option limits.closeTimeoutMs must be a number of milliseconds from 0 to 2147483647; got ${String(value)}`),
      )
    }
  })

  it("R60: calls made before dispose() but still waiting for their turn fail without running: the exit call as reloaded, the others with the disposed-before-turn message", async () => {
    const log = createControlledLog([{ type: 'turn/start', data: {} }])
    const channel = createControlledChannel()
    const planMode = createPlanMode({ section: 'S', review: channel, logger: { warn() {} } })
    const agent: PlanAgent = { id: 'a', session: log }
    expect(await planMode.set(agent, true)).toBe('queued')
    log.defaultFate = 'hold'
    const boundary = track(() => planMode.stepBoundary(agent)) // its flush is held
    await settle()
    const selection = track(() => planMode.set(agent, false)) // waits for its turn
    const call = track(() => planMode.exitTool.execute({ plan: PLAN }, { agent }))
    const command = track(() => planMode.command.run({ agent, rawInput: 'off' }))
    const disposal = track(() => planMode.dispose())
    await expect(planMode.set(agent, false)).rejects.toThrow(new Error('plan-mode service is disposed'))
    for (const held of [...log.held]) log.resolveHeld(held)
    await settle()
    expect(boundary.state).toEqual({ status: 'resolved', value: { section: 'S', messages: [] } })
    expect(selection.state).toEqual({ status: 'rejected', error: new Error("plan-mode service was disposed before this call's turn came; nothing was done") })
    expect(call.state).toEqual({ status: 'rejected', error: new Error('the plan-mode service was reloaded while the plan was under review; present the plan again') })
    expect(command.state).toEqual({ status: 'resolved', value: { kind: 'error', text: "Plan mode could not be changed: plan-mode service was disposed before this call's turn came; nothing was done" } })
    expect(disposal.state.status).toBe('resolved')
    expect(channel.asks).toHaveLength(0)
  })
})

describe('a log that breaks the seq contract (issue "Hardening", fault 4; failed before its fix)', () => {
  /** A memory log whose append answers the event with its seq shifted by `shift`, while subscribers hear the true one. */
  function lyingLog(shift: number): SessionLog {
    const inner = createMemorySessionLog()
    return {
      get events() {
        return inner.events
      },
      subscribe: (listener) => inner.subscribe(listener),
      append: (type, data) => {
        const event = inner.append(type, data) as SessionEvent
        return Promise.resolve({ ...event, seq: event.seq + shift })
      },
    }
  }

  it('R74, R9: an append that answers seq + 100 is reported and not believed: a later turn/start is heard and a selection in it is queued', async () => {
    const warnings: unknown[][] = []
    const planMode = createPlanMode({ section: 'S', logger: { warn: (...args: unknown[]) => warnings.push(args) } })
    const agent: PlanAgent = { id: 'a', session: lyingLog(100) }
    expect(await planMode.set(agent, true)).toBe('committed')
    expect(warnings).toEqual([
      ['plan-mode: the session log broke the seq contract; event ignored', new Error("plan/mode claims seq 101, but the log's last event has seq 1")],
    ])
    agent.session.append('turn/start', {})
    expect(await planMode.set(agent, false)).toBe('queued')
    expect(planMode.get(agent)).toEqual({ active: true, pending: false })
  })

  it('R74: a log that tells its subscribers late is read, not reported: an append answered ahead of unheard events catches up from the log', async () => {
    const warnings: unknown[][] = []
    const inner = createMemorySessionLog()
    const listeners: ((event: SessionEvent) => void)[] = []
    const late: SessionEvent[] = []
    const log: SessionLog = {
      get events() {
        return inner.events
      },
      // Subscribers hear each event only when the test flushes them.
      subscribe: (listener) => {
        listeners.push(listener)
        return () => {}
      },
      append: (type, data) => {
        const event = inner.append(type, data) as SessionEvent
        late.push(event)
        return Promise.resolve(event)
      },
    }
    const planMode = createPlanMode({ section: 'S', logger: { warn: (...args: unknown[]) => warnings.push(args) } })
    const agent: PlanAgent = { id: 'a', session: log }
    planMode.get(agent)
    log.append('turn/start', {}) // seq 1, not heard yet
    // The chart still thinks no turn is open: the selection commits (seq 2), and its answer,
    // ahead of seq 1, makes the chart read seq 1 and 2 from the log.
    expect(await planMode.set(agent, true)).toBe('committed')
    for (const event of late.splice(0)) for (const listener of listeners) listener(event) // heard late: ignored
    expect(await planMode.set(agent, false)).toBe('queued') // the turn is open
    expect(planMode.get(agent)).toEqual({ active: true, pending: false })
    expect(warnings).toEqual([])
  })
})

describe('an answer read once, as plain data (issue #23, defect 15; each failed before its fix)', () => {
  const MALFORMED =
    'answerReview needs a reviewId string and an answer { answers: [{ id: string, selected: string[], custom?: string, comments?: [{ quote, text }] }] }; nothing was changed'
  const approveItem = { id: 'plan-review', selected: ['Approve'] }
  /** An answer whose `answers` getter gives `first` on the first read and `later` on every other. */
  const changing = (first: unknown[], later: unknown[]) => {
    let reads = 0
    return { get answers() { return reads++ === 0 ? first : later } }
  }
  /** A selection whose only label is a getter: `first` on the first read, `later` after. */
  const changingLabel = (first: string, later: string) => {
    let reads = 0
    return Object.defineProperty([], 0, { enumerable: true, get: () => (reads++ === 0 ? first : later) })
  }

  /** A durable service's agent in plan mode with its review open. */
  async function openDurable() {
    const planMode = createPlanMode({ section: 'S', review: 'durable', logger: { warn() {} } })
    const session = createMemorySessionLog([{ type: 'plan/mode', data: { active: true } }])
    const agent: PlanAgent = { id: 'a', session }
    const { reviewId } = (await planMode.exitTool.execute({ plan: PLAN }, { agent })) as { reviewId: string }
    const outcomes = () => session.events.filter((e) => e.type === 'plan/review').map((e) => (e.data as { outcome: string }).outcome)
    return { planMode, agent, reviewId, outcomes }
  }

  const hostile: [string, () => unknown][] = [
    ['an answers getter: Keep planning first, then Approve with custom: 42', () => changing([{ id: 'plan-review', selected: ['Keep planning'] }], [{ ...approveItem, custom: 42 }])],
    ['an answers getter: Approve first, then Approve with custom: 42', () => changing([approveItem], [{ ...approveItem, custom: 42 }])],
    ['a selected label getter: Keep planning first, then Approve', () => ({ answers: [{ id: 'plan-review', selected: changingLabel('Keep planning', 'Approve') }] })],
    ['a custom getter: blank first, then feedback', () => ({ answers: [Object.defineProperty({ ...approveItem }, 'custom', { enumerable: true, get: (() => { let n = 0; return () => (n++ === 0 ? ' ' : 'no') })() })] })],
  ]
  for (const [what, answer] of hostile) {
    it(`R80, R44: answerReview refuses ${what} as malformed; nothing is approved and the review stays open`, async () => {
      const { planMode, agent, reviewId, outcomes } = await openDurable()
      await expect(planMode.answerReview(agent, reviewId, answer() as ReviewAnswer)).rejects.toThrow(new Error(MALFORMED))
      expect(outcomes()).toEqual(['requested'])
      expect(planMode.openReview(agent)?.reviewId).toBe(reviewId)
      expect(planMode.get(agent)).toEqual({ active: true })
      await planMode.dispose()
    })
  }

  it('R80, R44: a Proxy answer is read through its own data once, not through a get trap that answers Approve', async () => {
    const { planMode, agent, reviewId, outcomes } = await openDurable()
    const target = { answers: [{ id: 'plan-review', selected: ['Keep planning'] }] }
    let gets = 0
    const answer = new Proxy(target, {
      get: (t, key) => (key === 'answers' && gets++ > 0 ? [{ ...approveItem, custom: 42 }] : Reflect.get(t, key)),
    })
    expect(await planMode.answerReview(agent, reviewId, answer)).toBe('keep-planning')
    expect(outcomes()).toEqual(['requested', 'keep-planning'])
    await planMode.dispose()
  })

  /** A channel service's agent in plan mode; its exit call answered with `answer`: the call's outcome and the record. */
  async function channelAnswer(answer: unknown) {
    const warnings: unknown[][] = []
    const planMode = createPlanMode({ section: 'S', review: { ask: async () => answer as ReviewAnswer }, logger: { warn: (...args: unknown[]) => warnings.push(args) } })
    const session = createMemorySessionLog([{ type: 'plan/mode', data: { active: true } }])
    const agent: PlanAgent = { id: 'a', session }
    const settled = await planMode.exitTool.execute({ plan: PLAN }, { agent }).then(
      (value) => ({ value }),
      (error: Error) => ({ error: error.message }),
    )
    const record = session.events.find((e) => e.type === 'plan/review')?.data
    // The actor goes on working.
    expect(await planMode.set(agent, false)).toBe('committed')
    await planMode.dispose()
    return { settled, record, warnings }
  }

  it('R44, R46: a channel answer whose answers getter changes between reads is not approved: it cannot be read as data, and the call fails, recorded failed', async () => {
    const { settled, record } = await channelAnswer(changing([{ id: 'plan-review', selected: ['Keep planning'] }], [{ ...approveItem, custom: 42 }]))
    expect(settled).toEqual({ error: 'the plan review answer is not plain data (answers is a getter)' })
    expect(record).toEqual({ outcome: 'failed', title: 'Plan', plan: PLAN })
  })

  it('R44: a channel answer Approve with a custom that is not a string (custom: 42) is not consent: the user keeps planning', async () => {
    const { settled, record } = await channelAnswer({ answers: [{ ...approveItem, custom: 42 }] })
    expect(settled).toEqual({ error: 'The user chose to keep planning; revise the plan and present it again.' })
    expect(record).toEqual({ outcome: 'keep-planning', title: 'Plan', plan: PLAN })
  })

  it('R44, R46: a channel answer whose selected label is a getter cannot be read: the call fails with the path of the getter', async () => {
    const { settled } = await channelAnswer({ answers: [{ id: 'plan-review', selected: changingLabel('Keep planning', 'Approve') }] })
    expect(settled).toEqual({ error: 'the plan review answer is not plain data (answers[0].selected[0] is a getter)' })
  })

  it('R44, R46: an answer array too long to be anyone’s answer is not copied (the agent is not held up): the call fails', async () => {
    const { settled } = await channelAnswer({ answers: new Array(2 ** 32 - 1) })
    expect(settled).toEqual({ error: 'the plan review answer is too large (answers holds more than 10000 items)' })
  })

  // Hostile answers to a durable review (held when #23 was filed; pinned so that they stay held).
  const approve = (item: Record<string, unknown>) => ({ answers: [{ ...approveItem, ...item }] })
  const hostileApprovals: [string, () => unknown, 'keep-planning' | 'refused'][] = [
    ['an id that is a String object', () => ({ answers: [{ id: new String('plan-review'), selected: ['Approve'] }] }), 'refused'],
    ['an Approve that is a String object', () => ({ answers: [{ id: 'plan-review', selected: [new String('Approve')] }] }), 'refused'],
    ['a sparse selected [ , Approve ]', () => ({ answers: [{ id: 'plan-review', selected: [, 'Approve'] }] }), 'refused'], // eslint-disable-line no-sparse-arrays
    ['a selected array-like object', () => ({ answers: [{ id: 'plan-review', selected: { 0: 'Approve', length: 1 } }] }), 'refused'],
    ['a hole before the item', () => ({ answers: [, approveItem] }), 'refused'], // eslint-disable-line no-sparse-arrays
    ['custom: null', () => approve({ custom: null }), 'refused'],
    ['a custom that is a String object of spaces', () => approve({ custom: new String('  ') }), 'refused'],
    ['an inherited selected', () => ({ answers: [Object.assign(Object.create({ selected: ['Approve'] }), { id: 'plan-review' })] }), 'refused'],
    ['Approve with an extra selection', () => ({ answers: [{ id: 'plan-review', selected: ['Approve', 'Keep planning'] }] }), 'keep-planning'],
    ['two plan-review items that both approve', () => ({ answers: [approveItem, approveItem] }), 'keep-planning'],
    ['Approve with a comment', () => approve({ comments: [{ quote: '1. a', text: 'no' }] }), 'keep-planning'],
    [
      'a Proxy item whose selected reads Keep planning once and Approve after',
      () => {
        let reads = 0
        return { answers: [new Proxy({ id: 'plan-review', selected: ['Keep planning'] }, { get: (t, k) => (k === 'selected' && reads++ > 0 ? ['Approve'] : Reflect.get(t, k)) })] }
      },
      'keep-planning',
    ],
    ['a toJSON that says Approve', () => ({ answers: [], toJSON: () => ({ answers: [approveItem] }) }), 'keep-planning'],
  ]
  for (const [what, answer, expected] of hostileApprovals) {
    it(`R44, R80: answerReview with ${what} approves nothing: ${expected === 'refused' ? 'refused as malformed, the review stays open' : 'the user keeps planning'}`, async () => {
      const { planMode, agent, reviewId, outcomes } = await openDurable()
      if (expected === 'refused') {
        await expect(planMode.answerReview(agent, reviewId, answer() as ReviewAnswer)).rejects.toThrow(new Error(MALFORMED))
        expect(outcomes()).toEqual(['requested'])
        expect(planMode.openReview(agent)?.reviewId).toBe(reviewId)
      } else {
        expect(await planMode.answerReview(agent, reviewId, answer() as ReviewAnswer)).toBe('keep-planning')
        expect(outcomes()).toEqual(['requested', 'keep-planning'])
      }
      expect(planMode.get(agent)).toEqual({ active: true })
      await planMode.dispose()
    })
  }

  it('R44, R80: answerReview with a plain Approve approves (the control of the hostile answers above)', async () => {
    const { planMode, agent, reviewId, outcomes } = await openDurable()
    expect(await planMode.answerReview(agent, reviewId, approve({}))).toBe('approved')
    expect(outcomes()).toEqual(['requested', 'approved'])
    await planMode.dispose()
  })
})
