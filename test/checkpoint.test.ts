import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  PLAN_CHECKPOINT_VERSION,
  createMemoryCheckpointStore,
  createMemorySessionLog,
  createPlanMode,
  replayPlanLog,
  type PlanAgent,
  type PlanCheckpoint,
  type SessionEvent,
  type SessionLog,
} from '../src/index.js'
import { openFileCheckpointStore } from '../src/node.js'
import { restorePlanLog } from '../src/log/kinds.js'
import { restoreSession } from '../src/log/checkpoint.js'

const SECTION = 'PLAN MODE'
const IGNORED = 'plan-mode: checkpoint ignored; the log is replayed in full'

/** The events of a log as seeds (type and data). */
const seeds = (events: readonly SessionEvent[]) => events.map(({ type, data }) => ({ type, data }))

/** The checkpoint a service would save after the first `k` events of `events`. */
function checkpointAt(events: readonly SessionEvent[], k: number): PlanCheckpoint {
  const fold = replayPlanLog(events.slice(0, k))
  const last = events[k - 1]!
  return { version: PLAN_CHECKPOINT_VERSION, seq: last.seq, type: last.type, projection: fold.projection, openTurn: fold.openTurn, told: fold.told, review: fold.review }
}

/** The events a random log is made of: everything attach reads, and noise. */
const logEvent = fc.oneof(
  fc.boolean().map((active) => ({ type: 'plan/mode', data: { active } })),
  fc.constant({ type: 'turn/start', data: {} }),
  fc.constant({ type: 'turn/end', data: {} }),
  fc.constant({ type: 'request/header', data: { step: 0 } }),
  fc.tuple(fc.constantFrom('c1', 'c2', 'c3'), fc.constantFrom('', 'off', 'OFF', 'draft it')).map(([commandId, args]) => ({
    type: 'command/run',
    data: args === '' ? { commandId, name: 'plan' } : { commandId, name: 'plan', args },
  })),
  fc.tuple(fc.constantFrom('c1', 'c2', 'c3'), fc.constantFrom('success', 'error')).map(([commandId, kind]) => ({
    type: 'command/done',
    data: { commandId, kind },
  })),
  fc.constantFrom('approved', 'keep-planning', 'superseded').map((outcome) => ({
    type: 'plan/review',
    data: { outcome, title: 'T', plan: '# T' },
  })),
  // R79–R81: durable reviews, requested and closed (a record of another id, or a second one, is a lost answer).
  fc.constantFrom('r1', 'r2').map((reviewId) => ({ type: 'plan/review', data: { outcome: 'requested', reviewId, title: 'T', plan: '# T', callId: 'call-1' } })),
  fc.tuple(fc.constantFrom('r1', 'r2'), fc.constantFrom('approved', 'keep-planning', 'superseded'), fc.boolean()).map(([reviewId, outcome, toldInResult]) => ({
    type: 'plan/review',
    data: { outcome, reviewId, title: 'T', plan: '# T', ...(outcome === 'keep-planning' ? { feedback: 'Use SQLite.' } : {}), ...(toldInResult ? { toldInResult } : {}) },
  })),
  fc.constant({ type: 'message', data: { text: 'hello' } }),
)

describe('R76: checkpoints', () => {
  it('R76: attaching from a checkpoint and the tail gives the state of a full replay (random logs, random positions)', () => {
    fc.assert(
      fc.property(fc.array(logEvent, { minLength: 1, maxLength: 40 }), fc.nat(), (log, at) => {
        const full = createMemorySessionLog(log)
        const k = 1 + (at % log.length)
        const checkpoint = checkpointAt(full.events, k)
        const tail = createMemorySessionLog(log.slice(k), { checkpoint })
        const warn = () => {
          throw new Error('no warning expected')
        }
        expect(restoreSession(tail, warn).restore).toEqual(restorePlanLog(full.events))
        // The whole log with the checkpoint reads the same, too.
        const both: SessionLog = { ...full, events: full.events, checkpoint }
        expect(restoreSession(both, warn).restore).toEqual(restorePlanLog(full.events))
        // And so does the service: F, P and the section under E.
        const planMode = createPlanMode({ section: SECTION }, { logger: { warn } })
        const fromTail = createPlanMode({ section: SECTION }, { logger: { warn } })
        const a: PlanAgent = { id: 'a', session: full }
        const b: PlanAgent = { id: 'a', session: tail }
        expect(fromTail.get(b)).toEqual(planMode.get(a))
        expect(fromTail.section(b)).toBe(planMode.section(a))
        expect(fromTail.openReview(b)).toEqual(planMode.openReview(a))
      }),
      { numRuns: 300 },
    )
  })

  it('R76: the service saves a checkpoint when the agent goes idle after checkpointEvery events, and a new service attaches from it and the tail', async () => {
    const store = createMemoryCheckpointStore()
    const log = createMemorySessionLog()
    const planMode = createPlanMode({ section: SECTION }, { checkpoints: store, checkpointEvery: 3, logger: { warn() {} } })
    const agent: PlanAgent = { id: 'agent-1', session: log }
    log.append('turn/start', {})
    expect(await planMode.set(agent, true)).toBe('queued')
    await planMode.stepBoundary(agent) // plan/mode {true}
    log.append('request/header', { step: 0 })
    log.append('turn/end', {})
    await planMode.dispose() // waits for the checkpoint's write
    expect(store.saved.get('agent-1')).toEqual({
      version: PLAN_CHECKPOINT_VERSION,
      seq: 4,
      type: 'turn/end',
      projection: { active: true, runs: {}, kept: null },
      openTurn: false,
      told: true,
      review: { open: null, closed: null, news: null },
    })
    // A later process: the checkpoint, and only the events after it.
    log.append('turn/start', {})
    const next = createPlanMode({ section: SECTION }, { logger: { warn() {} } })
    const tail = createMemorySessionLog(seeds(log.events.slice(4)), { checkpoint: await store.load('agent-1') })
    const restarted: PlanAgent = { id: 'agent-1', session: tail }
    expect(tail.events.map((e) => e.seq)).toEqual([5])
    expect(next.get(restarted)).toEqual({ active: true })
    // K came from the checkpoint: the model was told, so the next boundary narrates nothing.
    expect(await next.stepBoundary(restarted)).toEqual({ section: SECTION, messages: [] })
    // The turn opened after the checkpoint is open: a selection waits.
    expect(await next.set(restarted, false)).toBe('queued')
  })

  it('R76: no checkpoint is saved before checkpointEvery events, nor in the middle of a turn', async () => {
    const store = createMemoryCheckpointStore()
    const log = createMemorySessionLog()
    const planMode = createPlanMode({ section: SECTION }, { checkpoints: store, checkpointEvery: 4, logger: { warn() {} } })
    const agent: PlanAgent = { id: 'a', session: log }
    planMode.get(agent)
    log.append('turn/start', {})
    log.append('turn/end', {}) // 2 events
    for (let i = 0; i < 5; i++) log.append('message', {}) // 7 events, no turn/end
    await planMode.set(agent, true)
    expect(store.saved.size).toBe(0)
    log.append('turn/end', {}) // seq 9: due
    await planMode.set(agent, false) // seq 10, appended within the call, before the write ran
    await planMode.dispose()
    // The checkpoint covers the log up to the turn/end that made it due.
    expect(store.saved.get('a')).toMatchObject({ seq: 9, type: 'turn/end', projection: { active: true } })
  })

  it('R76, R62: a checkpoint store whose save fails is reported and changes nothing else', async () => {
    const warnings: unknown[][] = []
    const failure = new Error('disk full')
    const planMode = createPlanMode(
      { section: SECTION },
      { checkpoints: { load: () => undefined, save: () => Promise.reject(failure) }, checkpointEvery: 1, logger: { warn: (...args: unknown[]) => warnings.push(args) } },
    )
    const log = createMemorySessionLog()
    const agent: PlanAgent = { id: 'a', session: log }
    planMode.get(agent)
    log.append('turn/end', {})
    expect(await planMode.set(agent, true)).toBe('committed')
    expect(warnings).toEqual([['plan-mode: checkpoint write failed', failure]])
    expect(planMode.get(agent)).toEqual({ active: true })
  })

  it('R76: a checkpoint of another version is ignored with a warning and the whole log replayed', () => {
    const warnings: unknown[][] = []
    const log = createMemorySessionLog([{ type: 'plan/mode', data: { active: true } }, { type: 'turn/start', data: {} }])
    const stale = { ...checkpointAt(log.events, 1), version: 'xstate-plan-mode/checkpoint@0', openTurn: true }
    const session: SessionLog = { ...log, events: log.events, checkpoint: stale }
    const planMode = createPlanMode({ section: SECTION }, { logger: { warn: (...args: unknown[]) => warnings.push(args) } })
    expect(planMode.get({ id: 'a', session })).toEqual({ active: true })
    expect(warnings).toEqual([
      [IGNORED, new Error(`the checkpoint's version is "xstate-plan-mode/checkpoint@0", not "${PLAN_CHECKPOINT_VERSION}"`)],
    ])
  })

  it('R76: a checkpoint that does not match the log it is given with is ignored with a warning', () => {
    const warnings: unknown[][] = []
    const log = createMemorySessionLog([{ type: 'turn/start', data: {} }, { type: 'plan/mode', data: { active: true } }])
    // It claims seq 2 was a turn/end after plan mode was left: another log's checkpoint.
    const foreign: PlanCheckpoint = { version: PLAN_CHECKPOINT_VERSION, seq: 2, type: 'turn/end', projection: { active: false, runs: {}, kept: null }, openTurn: false, told: null, review: { open: null, closed: null, news: null } }
    const planMode = createPlanMode({ section: SECTION }, { logger: { warn: (...args: unknown[]) => warnings.push(args) } })
    expect(planMode.get({ id: 'a', session: { ...log, events: log.events, checkpoint: foreign } })).toEqual({ active: true })
    expect(warnings).toEqual([[IGNORED, new Error('the checkpoint covers seq 2 (turn/end), but the log holds plan/mode at seq 2')]])
  })

  it('R76: a log that holds only a tail and an unusable checkpoint cannot attach', () => {
    const tail: SessionLog = {
      events: [Object.freeze({ seq: 11, type: 'turn/start', data: {} })],
      checkpoint: { version: PLAN_CHECKPOINT_VERSION, seq: 9, type: 'turn/end', projection: { active: true, runs: {}, kept: null }, openTurn: false, told: true, review: { open: null, closed: null, news: null } },
      append: () => {
        throw new Error('read only')
      },
      subscribe: () => () => {},
    }
    const planMode = createPlanMode({ section: SECTION }, { logger: { warn() {} } })
    expect(() => planMode.get({ id: 'a', session: tail })).toThrow(
      new Error(
        "plan-mode: the session log holds no event from seq 1 and its checkpoint cannot be used (the log's events jump from the checkpoint's seq 9 to seq 11); load the whole log",
      ),
    )
  })

  it('R76: hostile checkpoints are refused with the check that failed, never thrown through', () => {
    const base = { version: PLAN_CHECKPOINT_VERSION, seq: 1, type: 'turn/end', projection: { active: true, runs: {}, kept: null }, openTurn: false, told: true, review: { open: null, closed: null, news: null } }
    const throwing = Object.defineProperty({ ...base }, 'seq', {
      get() {
        throw new Error('boom')
      },
    })
    const cases: [unknown, string][] = [
      ['text', 'the checkpoint is not an object'],
      [{ ...base, version: 1 }, `the checkpoint's version is 1, not "${PLAN_CHECKPOINT_VERSION}"`],
      [{ ...base, seq: 0 }, 'the checkpoint names no event (seq, type)'],
      [{ ...base, seq: 1.5 }, 'the checkpoint names no event (seq, type)'],
      [{ ...base, projection: { active: 'yes', runs: {}, kept: null } }, 'the checkpoint holds no valid fold (projection, openTurn, told, review, approved, episode)'],
      [{ ...base, projection: { active: true, runs: { c1: 'on' }, kept: null } }, 'the checkpoint holds no valid fold (projection, openTurn, told, review, approved, episode)'],
      [{ ...base, told: 'maybe' }, 'the checkpoint holds no valid fold (projection, openTurn, told, review, approved, episode)'],
      [throwing, 'the checkpoint cannot be read: boom'],
      // R79: a checkpoint@2 carries the durable reviews' fold.
      [{ ...base, review: undefined }, 'the checkpoint holds no valid fold (projection, openTurn, told, review, approved, episode)'],
      [{ ...base, review: { open: { reviewId: 7, title: 'T', plan: '# T', version: 1 }, closed: null, news: null } }, 'the checkpoint holds no valid fold (projection, openTurn, told, review, approved, episode)'],
      [{ ...base, review: { open: null, closed: null, news: { outcome: 'maybe' } } }, 'the checkpoint holds no valid fold (projection, openTurn, told, review, approved, episode)'],
    ]
    for (const [checkpoint, problem] of cases) {
      expect(() => createMemorySessionLog([], { checkpoint })).toThrow(new Error(`createMemorySessionLog: ${problem}`))
    }
  })

  it('R76: checkpointEvery and checkpoints are checked', () => {
    for (const value of [0, 1.5, -3, '100']) {
      expect(() => createPlanMode({ section: SECTION }, { checkpointEvery: value as never })).toThrow(
        new TypeError(`plan mode option checkpointEvery must be a whole number of events, at least 1; got ${String(value)}`),
      )
    }
    expect(() => createPlanMode({ section: SECTION }, { checkpoints: {} as never })).toThrow(
      new TypeError('plan mode option checkpoints needs a save(agentId, checkpoint) method'),
    )
  })
})

describe('R76: the file checkpoint store', () => {
  let directory: string
  beforeAll(async () => {
    directory = await mkdtemp(join(tmpdir(), 'plan-mode-checkpoints-'))
  })
  afterAll(async () => {
    await rm(directory, { recursive: true, force: true })
  })

  it('R76: saves each agent in its own file, replaced whole, and loads it back', async () => {
    const store = openFileCheckpointStore(join(directory, 'nested'), { fsync: false })
    expect(await store.load('agent/1')).toBeUndefined()
    const log = createMemorySessionLog([{ type: 'plan/mode', data: { active: true } }, { type: 'turn/end', data: {} }])
    await store.save('agent/1', checkpointAt(log.events, 2))
    expect(JSON.parse(await readFile(join(directory, 'nested', 'agent%2F1.json'), 'utf8'))).toEqual(checkpointAt(log.events, 2))
    expect(await store.load('agent/1')).toEqual(checkpointAt(log.events, 2))
  })

  it('R76: a damaged file is refused with its name', async () => {
    const store = openFileCheckpointStore(directory)
    await writeFile(join(directory, 'b.json'), '{"version":')
    await expect(store.load('b')).rejects.toThrow(new Error(`${join(directory, 'b.json')}: not valid JSON`))
  })
})
