import { describe, expect, it, vi } from 'vitest'
import {
  createMemoryCheckpointStore,
  createMemorySessionLog,
  createPlanMode,
  replayPlanLog,
  type CheckpointStore,
  type PendingStore,
  type PlanAgent,
  type SessionEvent,
  type SessionLog,
} from '../src/index.js'
import { createCheckpoint } from '../src/log/checkpoint.js'
import { createControlledLog, settle, track } from './sut.js'

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
const SEQ_WARNING = 'plan-mode: the session log broke the seq contract; event ignored'

describe('found by a review of the hardening and checkpoint work (each failed before its fix)', () => {
  // Both run on fake timers (setTimeout only): the timeouts race each other by design, and a busy
  // machine must not reorder them (it did: `committed` instead of `noop` under load).
  it('R73, R3: while a closed attachment still waits for a checkpoint write, the next selection waits for it and for the abandoned append', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] })
    try {
      const log = createControlledLog()
      const slowStore: CheckpointStore = { load: () => undefined, save: () => sleep(100).then(() => {}) }
      const planMode = createPlanMode({ section: 'S', checkpoints: { store: slowStore, every: 1 }, limits: { closeTimeoutMs: 20 }, logger: { warn() {} } })
      const agent: PlanAgent = { id: 'a', session: log }
      planMode.get(agent)
      log.defaultFate = 'hold'
      void planMode.set(agent, true).catch(() => {}) // held
      await settle()
      log.hostAppend('turn/start', {})
      log.hostAppend('turn/end', {}) // a checkpoint write starts: 100 ms
      planMode.detach(agent) // abandoned after 20 ms; the close then waits for the checkpoint
      await vi.advanceTimersByTimeAsync(40)
      log.defaultFate = 'ok'
      const again = track(() => planMode.set(agent, true)) // made while the close still waits
      // Within the next operation's wait for the abandoned append (another 20 ms, R73); with real
      // sleeps this landing raced that wait's end, and a busy machine let the wait expire first.
      await vi.advanceTimersByTimeAsync(10)
      for (const held of [...log.held]) log.resolveHeld(held) // the abandoned append lands after all
      await vi.advanceTimersByTimeAsync(100)
      await settle()
      expect(again.state).toEqual({ status: 'resolved', value: 'noop' })
      expect(log.events.filter((e) => e.type === 'plan/mode')).toHaveLength(1)
    } finally {
      vi.useRealTimers()
    }
  })

  it('R73: dispose() settles although a checkpoint write never does, with one warning', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] })
    try {
      const warnings: unknown[][] = []
      const stuck: CheckpointStore = { load: () => undefined, save: () => new Promise(() => {}) }
      const planMode = createPlanMode(
        { section: 'S', checkpoints: { store: stuck, every: 1 }, limits: { closeTimeoutMs: 30 }, logger: { warn: (...args: unknown[]) => warnings.push(args) } },
      )
      const log = createMemorySessionLog()
      planMode.get({ id: 'a', session: log })
      log.append('turn/start', {})
      log.append('turn/end', {})
      const disposal = track(() => planMode.dispose())
      await vi.advanceTimersByTimeAsync(60)
      await settle()
      expect(disposal.state.status).toBe('resolved')
      expect(warnings).toEqual([
        ['plan-mode: a pending-store or checkpoint write did not settle within 30 ms of a reload or detach; it was abandoned', undefined],
      ])
    } finally {
      vi.useRealTimers()
    }
  })

  it('R73: a close timeout beyond what setTimeout keeps is refused, not turned into 1 ms', () => {
    expect(() => createPlanMode({ section: 'S', limits: { closeTimeoutMs: 30 * 24 * 3600 * 1000 } })).toThrow(
      new TypeError('plan mode option limits.closeTimeoutMs must be a number of milliseconds from 0 to 2147483647; got 2592000000'),
    )
    expect(() => createPlanMode({ section: 'S', limits: { closeTimeoutMs: 2_147_483_647 } })).not.toThrow()
  })

  it('R74: the first event of an empty log is taken, whatever the order in which the log tells of it', async () => {
    // A log whose append resolves before its events and subscribers know of the event.
    const inner = createMemorySessionLog()
    const warnings: unknown[][] = []
    const log: SessionLog = {
      get events() {
        return inner.events
      },
      subscribe: (listener) => inner.subscribe(listener),
      append: (type, data) => {
        const event: SessionEvent = { seq: inner.events.length + 1, type, data }
        setTimeout(() => void inner.append(type, data), 0) // told after the append answered
        return Promise.resolve(event)
      },
    }
    const planMode = createPlanMode({ section: 'S', logger: { warn: (...args: unknown[]) => warnings.push(args) } })
    const agent: PlanAgent = { id: 'a', session: log }
    expect(await planMode.set(agent, true)).toBe('committed')
    expect(planMode.get(agent)).toEqual({ active: true })
    expect(warnings).toEqual([])
  })

  it('R74: an append answered with a seq the log had before it began is reported (a log whose appends restarted at seq 1 behind its checkpoint)', async () => {
    const warnings: unknown[][] = []
    // A checkpoint of a 51-event log, handed over with its event; the host's log then restarted its appends at seq 1.
    const store = createMemoryCheckpointStore()
    const source = createPlanMode({ section: 'S', checkpoints: { store, every: 1 }, logger: { warn() {} } })
    const long = createMemorySessionLog(Array.from({ length: 50 }, () => ({ type: 'message', data: {} })))
    source.get({ id: 'a', session: long })
    long.append('turn/end', {})
    await source.dispose()
    const restarted = createMemorySessionLog()
    const session: SessionLog = {
      events: long.events.slice(50),
      checkpoint: store.saved.get('a'),
      subscribe: (listener) => restarted.subscribe(listener),
      append: async (type, data) => restarted.append(type, data),
    }
    const planMode = createPlanMode({ section: 'S', logger: { warn: (...args: unknown[]) => warnings.push(args) } })
    await planMode.set({ id: 'a', session }, true).catch(() => {})
    expect(warnings).toContainEqual([SEQ_WARNING, new Error('plan/mode was appended with seq 1, but the log already had seq 51')])
  })

  it('R76: a log restarted empty behind a checkpoint of its older self is replayed in full (it holds nothing), after the warning', () => {
    const long = createMemorySessionLog(Array.from({ length: 50 }, () => ({ type: 'message', data: {} })))
    long.append('turn/end', {})
    const stale = createCheckpoint('a', replayPlanLog(long.events), long.events)
    const restarted = createMemorySessionLog()
    const warnings: unknown[][] = []
    const planMode = createPlanMode({ section: 'S', logger: { warn: (...args: unknown[]) => warnings.push(args) } })
    expect(planMode.get({ id: 'a', session: { ...restarted, events: restarted.events, checkpoint: stale } })).toEqual({ active: false })
    expect(warnings).toEqual([
      [
        'plan-mode: checkpoint ignored; the log is replayed in full',
        new Error('the log does not hold the event the checkpoint ends at (seq 51), which a loader must load with the events after it'),
      ],
    ])
  })

  it('R77: an agent whose pending-store write failed keeps its pending selection in memory: it does not leave', async () => {
    const failing: PendingStore = {
      get: () => undefined,
      set: () => {
        throw new Error('store down')
      },
      delete: () => {},
    }
    const planMode = createPlanMode({ section: 'S', pendingStore: failing, limits: { maxAttachedAgents: 1 }, logger: { warn() {} } })
    const a: PlanAgent = { id: 'a', session: createMemorySessionLog([{ type: 'turn/start', data: {} }]) }
    expect(await planMode.set(a, true)).toBe('queued')
    planMode.get({ id: 'b', session: createMemorySessionLog() })
    await settle()
    expect(planMode.get(a)).toEqual({ active: false, pending: true })
  })

  it('R76: a quiet step boundary does not wait for a slow checkpoint write', async () => {
    // A write that lands only when the test says: the boundary resolving while it is held is the proof.
    let land!: () => void
    const held = new Promise<void>((resolve) => (land = resolve))
    let saves = 0
    const slowStore: CheckpointStore = { load: () => undefined, save: () => (saves++, held) }
    const planMode = createPlanMode({ section: 'S', checkpoints: { store: slowStore, every: 1 }, logger: { warn() {} } })
    const log = createMemorySessionLog()
    const agent: PlanAgent = { id: 'a', session: log }
    planMode.get(agent)
    log.append('turn/start', {})
    log.append('turn/end', {})
    await planMode.stepBoundary(agent)
    expect(saves).toBeGreaterThan(0)
    land()
    await planMode.dispose()
  })

  it('R76: with a store whose save fails, each checkpoint folds only the events since the last attempt', async () => {
    let saves = 0
    const folded: number[] = []
    const failing: CheckpointStore = {
      load: () => undefined,
      save: (_id, checkpoint) => {
        saves++
        folded.push(checkpoint.seq)
        throw new Error('disk full')
      },
    }
    const planMode = createPlanMode({ section: 'S', checkpoints: { store: failing, every: 10 }, logger: { warn() {} } })
    const log = createMemorySessionLog()
    planMode.get({ id: 'a', session: log })
    for (let turn = 0; turn < 50; turn++) {
      log.append('turn/start', {})
      log.append('turn/end', {})
    }
    await planMode.dispose()
    // A checkpoint is due every 10 seqs past the last attempt, not at every turn/end after the first.
    expect(saves).toBe(10)
    expect(folded).toEqual([10, 20, 30, 40, 50, 60, 70, 80, 90, 100])
  })

  it('R76: a checkpoint store that answers null for "none" gives no checkpoint', () => {
    const log = createMemorySessionLog([{ type: 'plan/mode', data: { active: true } }], { checkpoint: null })
    expect(log.events.map((e) => e.seq)).toEqual([1])
    expect(createPlanMode({ section: 'S' }).get({ id: 'a', session: log })).toEqual({ active: true })
  })
})


/** Issue #11's faults 1 and 2, which the rebuilt chart (issue #10) fixed: both failed on c7e6da9, the code the issue was filed against. */
describe('hardening faults 1 and 2 (each failed on c7e6da9)', () => {
  const PLAN = '# Plan\n\n1. Do it.'

  it('R62: a review answer whose `selected` getter throws fails the review with the error\'s message; the actor keeps working', async () => {
    const answer = { answers: [{ id: 'plan-review', get selected(): string[] { throw new Error('selected is unreadable') } }] }
    const planMode = createPlanMode({ section: 'S', logger: { warn() {} }, review: { ask: async () => answer } })
    const agent: PlanAgent = { id: 'a', session: createMemorySessionLog() }
    await planMode.set(agent, true)
    await expect(planMode.exitTool.execute({ plan: PLAN }, { agent })).rejects.toThrow(new Error('selected is unreadable'))
    expect(planMode.actor(agent).getSnapshot().status).toBe('active')
    expect(agent.session.events.at(-1)?.data).toEqual({ outcome: 'failed', title: 'Plan', plan: PLAN })
    expect(await planMode.set(agent, false)).toBe('committed')
  })

  it('R62: a Proxy as `answers` that throws on every read fails the review with its message; the next call works', async () => {
    const answers = new Proxy([], { get() { throw new Error('answers are unreadable') } })
    const planMode = createPlanMode({ section: 'S', logger: { warn() {} }, review: { ask: async () => ({ answers }) } })
    const agent: PlanAgent = { id: 'a', session: createMemorySessionLog() }
    await planMode.set(agent, true)
    await expect(planMode.exitTool.execute({ plan: PLAN }, { agent })).rejects.toThrow(new Error('answers are unreadable'))
    expect(planMode.actor(agent).getSnapshot().status).toBe('active')
    expect(await planMode.stepBoundary(agent)).toMatchObject({ section: 'S' })
  })

  it('R62, R63: a subscribe that returns no function: detach still settles and the agent re-attaches', async () => {
    const inner = createMemorySessionLog()
    const session: SessionLog = {
      get events() { return inner.events },
      append: (type, data) => inner.append(type, data),
      subscribe: (listener) => {
        inner.subscribe(listener)
        return undefined as unknown as () => void
      },
    }
    const planMode = createPlanMode({ section: 'S', logger: { warn() {} } })
    const agent: PlanAgent = { id: 'a', session }
    expect(await planMode.set(agent, true)).toBe('committed')
    await planMode.detach(agent)
    expect(await planMode.set(agent, false)).toBe('committed')
    expect(await planMode.stepBoundary(agent)).toMatchObject({ section: '' })
  })
})

describe('found by a review of the durable-review work (each failed before its fix)', () => {
  it('R74: a log that tells its subscribers within append and resolves later raises no seq warning', async () => {
    const warnings: string[] = []
    const inner = createMemorySessionLog()
    const session: SessionLog = {
      get events() { return inner.events },
      subscribe: (listener) => inner.subscribe(listener),
      // Tells subscribers at once (the memory log does), answers 5 ms later.
      append: (type, data) => {
        const event = inner.append(type, data)
        return new Promise<SessionEvent>((resolve) => setTimeout(() => resolve(event), 5))
      },
    }
    const planMode = createPlanMode({ section: 'S', logger: { warn: (message: string) => warnings.push(message) } })
    const agent: PlanAgent = { id: 'a', session }
    expect(await planMode.set(agent, true)).toBe('committed')
    expect(await planMode.set(agent, false)).toBe('committed')
    expect(warnings).toEqual([])
  })
})
