import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createMemoryCheckpointStore, createMemorySessionLog, createPlanMode, dueHandoff, planProjection, replayPlanLog, type PlanAgent, type PlanCheckpoint, type SessionEvent, type SessionLog } from '../src/index.js'
import { PLAN_CHECKPOINT_VERSION, readCheckpoint } from '../src/log/checkpoint.js'
import { openFileCheckpointStore } from '../src/node.js'
import { restorePlanLog } from '../src/log/kinds.js'
import { approvedPlanOf, createCheckpoint, restoreSession } from '../src/log/checkpoint.js'
import { episodeBefore, planHistory } from '../src/log/history.js'
import { canonicalJson, eventDigest, fnv1a64 } from '../src/log/digest.js'

const SECTION = 'PLAN MODE'
const IGNORED = 'plan-mode: checkpoint ignored; the log is replayed in full'

/** The events of a log as seeds (type and data). */
const seeds = (events: readonly SessionEvent[]) => events.map(({ type, data }) => ({ type, data }))

/** The checkpoint agent `a`'s service would save after the first `k` events of `events`, or null where it makes none. */
function checkpointAt(events: readonly SessionEvent[], k: number): PlanCheckpoint | null {
  return createCheckpoint('a', replayPlanLog(events.slice(0, k)), events.slice(0, k))
}

/** A checkpoint of agent `a` as data, for the checks of its fields. */
const checkpointData = (fields: Partial<PlanCheckpoint> = {}) => ({
  version: PLAN_CHECKPOINT_VERSION,
  agentId: 'a',
  seq: 1,
  type: 'turn/end',
  digest: eventDigest({ seq: 1, type: 'turn/end', data: {} }),
  projection: { active: true, runs: {}, kept: null },
  openTurn: false,
  told: true,
  review: { open: null, closed: null, news: null },
  ...fields,
})

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
        if (checkpoint === null) return // none is made there (a review open since before the episode)
        // The loader's events: the checkpoint's own, then those after it.
        const tail = createMemorySessionLog(log.slice(k - 1), { checkpoint, agentId: 'a' })
        const warn = () => {
          throw new Error('no warning expected')
        }
        expect(restoreSession(tail, 'a', warn).restore).toEqual(restorePlanLog(full.events))
        // The whole log with the checkpoint reads the same, too.
        const both: SessionLog = { ...full, events: full.events, checkpoint }
        expect(restoreSession(both, 'a', warn).restore).toEqual(restorePlanLog(full.events))
        // And so does the service: F, P and the section under E.
        const planMode = createPlanMode({ section: SECTION, logger: { warn } })
        const fromTail = createPlanMode({ section: SECTION, logger: { warn } })
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
    const planMode = createPlanMode({ section: SECTION, checkpoints: { store, every: 3 }, logger: { warn() {} } })
    const agent: PlanAgent = { id: 'agent-1', session: log }
    log.append('turn/start', {})
    expect(await planMode.set(agent, true)).toBe('queued')
    await planMode.stepBoundary(agent) // plan/mode {true}
    log.append('request/header', { step: 0 })
    log.append('turn/end', {})
    await planMode.dispose() // waits for the checkpoint's write
    expect(store.saved.get('agent-1')).toEqual({
      version: PLAN_CHECKPOINT_VERSION,
      agentId: 'agent-1',
      seq: 4,
      type: 'turn/end',
      digest: eventDigest({ seq: 4, type: 'turn/end', data: {} }),
      projection: { active: true, runs: {}, kept: null },
      openTurn: false,
      told: true,
      review: { open: null, closed: null, news: null },
    })
    // A later process: the checkpoint, the event it ends at and the events after it.
    log.append('turn/start', {})
    const next = createPlanMode({ section: SECTION, logger: { warn() {} } })
    const tail = createMemorySessionLog(seeds(log.events.slice(3)), { checkpoint: await store.load('agent-1'), agentId: 'agent-1' })
    const restarted: PlanAgent = { id: 'agent-1', session: tail }
    expect(tail.events.map((e) => e.seq)).toEqual([4, 5])
    expect(next.get(restarted)).toEqual({ active: true })
    // K came from the checkpoint: the model was told, so the next boundary narrates nothing.
    expect(await next.stepBoundary(restarted)).toEqual({ section: SECTION, messages: [] })
    // The turn opened after the checkpoint is open: a selection waits.
    expect(await next.set(restarted, false)).toBe('queued')
  })

  it('R76: no checkpoint is saved before checkpointEvery events, nor in the middle of a turn', async () => {
    const store = createMemoryCheckpointStore()
    const log = createMemorySessionLog()
    const planMode = createPlanMode({ section: SECTION, checkpoints: { store, every: 4 }, logger: { warn() {} } })
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
    let warned!: () => void
    const reported = new Promise<void>((resolve) => (warned = resolve))
    const failure = new Error('disk full')
    const planMode = createPlanMode(
      { section: SECTION, checkpoints: { store: { load: () => undefined, save: () => Promise.reject(failure) }, every: 1 }, logger: { warn: (...args: unknown[]) => (warnings.push(args), warned()) } },
    )
    const log = createMemorySessionLog()
    const agent: PlanAgent = { id: 'a', session: log }
    planMode.get(agent)
    log.append('turn/end', {})
    expect(await planMode.set(agent, true)).toBe('committed')
    // Operations do not wait for a checkpoint write (R76): its failure is reported on its own chain.
    await reported
    expect(warnings).toEqual([['plan-mode: checkpoint write failed', failure]])
    expect(planMode.get(agent)).toEqual({ active: true })
  })

  it('R76: a checkpoint of another version is ignored with a warning and the whole log replayed', () => {
    const warnings: unknown[][] = []
    const log = createMemorySessionLog([{ type: 'plan/mode', data: { active: true } }, { type: 'turn/start', data: {} }])
    const stale = { ...checkpointAt(log.events, 1)!, version: 'xstate-plan-mode/checkpoint@0', openTurn: true }
    const session: SessionLog = { ...log, events: log.events, checkpoint: stale }
    const planMode = createPlanMode({ section: SECTION, logger: { warn: (...args: unknown[]) => warnings.push(args) } })
    expect(planMode.get({ id: 'a', session })).toEqual({ active: true })
    expect(warnings).toEqual([
      [IGNORED, new Error(`the checkpoint's version is "xstate-plan-mode/checkpoint@0", not "${PLAN_CHECKPOINT_VERSION}"`)],
    ])
  })

  it('R76: a checkpoint that does not match the log it is given with is ignored with a warning', () => {
    const warnings: unknown[][] = []
    const log = createMemorySessionLog([{ type: 'turn/start', data: {} }, { type: 'plan/mode', data: { active: true } }])
    // It claims seq 2 was a turn/end after plan mode was left: another log's checkpoint.
    const foreign = checkpointData({ seq: 2, type: 'turn/end', projection: { active: false, runs: {}, kept: null }, told: null })
    const planMode = createPlanMode({ section: SECTION, logger: { warn: (...args: unknown[]) => warnings.push(args) } })
    expect(planMode.get({ id: 'a', session: { ...log, events: log.events, checkpoint: foreign } })).toEqual({ active: true })
    expect(warnings).toEqual([[IGNORED, new Error('the checkpoint covers seq 2 (turn/end), but the log holds plan/mode at seq 2')]])
  })

  it('R76: a log that holds only a tail and an unusable checkpoint cannot attach', () => {
    const tail: SessionLog = {
      events: [Object.freeze({ seq: 11, type: 'turn/start', data: {} })],
      checkpoint: checkpointData({ seq: 9 }),
      append: () => {
        throw new Error('read only')
      },
      subscribe: () => () => {},
    }
    const planMode = createPlanMode({ section: SECTION, logger: { warn() {} } })
    expect(() => planMode.get({ id: 'a', session: tail })).toThrow(
      new Error(
        "plan-mode: the session log holds no event from seq 1 and its checkpoint cannot be used (the log's events jump from the checkpoint's seq 9 to seq 11); load the whole log",
      ),
    )
  })

  it('R76: hostile checkpoints are refused with the check that failed, never thrown through', () => {
    const base = checkpointData()
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
      [{ ...base, review: { open: null, closed: { reviewId: 'r1', outcome: 'maybe' }, news: null } }, 'the checkpoint holds no valid fold (projection, openTurn, told, review, approved, episode)'],
      // R96, R102: the episode's decisions and open presentations are of its versions.
      [{ ...base, episode: { version: 1, plan: '# T', decisions: [{ version: 2, feedback: 'x' }] } }, 'the checkpoint holds no valid fold (projection, openTurn, told, review, approved, episode)'],
      [{ ...base, episode: { version: 1, plan: '# T', open: [{ reviewId: 'r1', version: 1 }, { reviewId: 'r1', version: 1 }] } }, 'the checkpoint holds no valid fold (projection, openTurn, told, review, approved, episode)'],
      // The binding: the agent it was saved for and the digest of the event it ends at.
      [{ ...base, agentId: undefined }, 'the checkpoint is bound to no agent and event (agentId, digest)'],
      [{ ...base, digest: 'md5:0' }, 'the checkpoint is bound to no agent and event (agentId, digest)'],
      [{ ...base, agentId: 'b' }, 'the checkpoint is of agent "b", not "a"'],
    ]
    for (const [checkpoint, problem] of cases) {
      expect(() => createMemorySessionLog([], { checkpoint, agentId: 'a' })).toThrow(new Error(`createMemorySessionLog: ${problem}`))
    }
  })

  it('R76: checkpoints.every and checkpoints.store are checked', () => {
    for (const value of [0, 1.5, -3, '100']) {
      expect(() => createPlanMode({ section: SECTION, checkpoints: { store: createMemoryCheckpointStore(), every: value as never } })).toThrow(
        new TypeError(`plan mode option checkpoints.every must be a whole number of events, at least 1; got ${String(value)}`),
      )
    }
    expect(() => createPlanMode({ section: SECTION, checkpoints: { store: {} as never } })).toThrow(
      new TypeError('plan mode option checkpoints.store needs a save(agentId, checkpoint) method'),
    )
  })
})

describe('R76: a checkpoint is bound to its session and to the event it ends at', () => {
  const TITLE = 'Ship the importer'
  const PLAN = `# ${TITLE}\n\n1. Parse the CSV.`
  const APPROVE = { answers: [{ id: 'plan-review', selected: ['Approve'] }] }
  const durable = (options: Omit<Parameters<typeof createPlanMode>[0], 'section'> = {}) => createPlanMode({ section: SECTION, review: 'durable', logger: { warn() {} }, ...options })

  /** Session A's checkpoint (store key `agent-a`): its plan approved, saved at its turn/end, seq 5. */
  async function approvedCheckpoint(): Promise<unknown> {
    const store = createMemoryCheckpointStore()
    const source = durable({ checkpoints: { store, every: 1 } })
    const a: PlanAgent = { id: 'agent-a', session: createMemorySessionLog() }
    expect(await source.set(a, true)).toBe('committed') // 1
    a.session.append('turn/start', {}) // 2
    const submitted = (await source.exitTool.execute({ plan: PLAN }, { agent: a })) as { reviewId: string } // 3
    expect(await source.answerReview(a, submitted.reviewId, APPROVE)).toBe('approved') // 4
    a.session.append('turn/end', {}) // 5: a checkpoint is due
    await source.dispose()
    const checkpoint = await store.load('agent-a')
    expect(checkpoint).toMatchObject({ seq: 5, type: 'turn/end', review: { open: null, news: { outcome: 'approved' } } })
    return checkpoint
  }

  /** Session B: planning, its review open, a turn/end at seq 5 too. */
  const planningLog = () =>
    createMemorySessionLog([
      { type: 'plan/mode', data: { active: true } },
      { type: 'turn/start', data: {} },
      { type: 'plan/review', data: { outcome: 'requested', reviewId: 'review-b', title: TITLE, plan: PLAN } },
      { type: 'message', data: { text: 'I presented the plan.' } },
      { type: 'turn/end', data: {} },
    ])

  it("R76: a checkpoint of another session copied into a session planning with a review open is ignored with a warning: nothing is approved and the state is the full replay's (regression: it was believed, and the open review became an approval)", async () => {
    const copied = await approvedCheckpoint()
    const log = planningLog()
    const warnings: unknown[][] = []
    const attacked = durable({ logger: { warn: (...args: unknown[]) => warnings.push(args) } })
    const b: PlanAgent = { id: 'agent-b', session: { ...log, events: log.events, checkpoint: copied } }
    const replayed = durable()
    const full: PlanAgent = { id: 'agent-b', session: planningLog() }
    const open = { reviewId: 'review-b', title: TITLE, plan: PLAN, version: 1, seq: 3 }
    expect(attacked.get(b)).toEqual({ active: true })
    expect(attacked.openReview(b)).toEqual(open)
    expect(attacked.approvedPlan(b)).toBeNull()
    expect(warnings).toEqual([[IGNORED, new Error('the checkpoint is of agent "agent-a", not "agent-b"')]])
    // The state a full replay gives: still planning, nothing told (no approval news).
    expect([attacked.get(b), attacked.openReview(b), attacked.section(b)]).toEqual([replayed.get(full), replayed.openReview(full), replayed.section(full)])
    expect(await attacked.stepBoundary(b)).toEqual({ section: SECTION, messages: [] })
    expect(await replayed.stepBoundary(full)).toEqual({ section: SECTION, messages: [] })
  })

  it("R76: a checkpoint whose event is not the log's at its seq (a log rewritten since, another log's backup) is ignored with a warning naming both digests", () => {
    const original = createMemorySessionLog([{ type: 'plan/mode', data: { active: true } }, { type: 'turn/end', data: { turn: 'a1' } }])
    const checkpoint = checkpointAt(original.events, 2)!
    // The log was rewritten since: the same seq and type, other data.
    const rewritten = createMemorySessionLog([{ type: 'plan/mode', data: { active: false } }, { type: 'turn/end', data: { turn: 'b7' } }])
    const warnings: unknown[][] = []
    const planMode = createPlanMode({ section: SECTION, logger: { warn: (...args: unknown[]) => warnings.push(args) } })
    expect(planMode.get({ id: 'a', session: { ...rewritten, events: rewritten.events, checkpoint } })).toEqual({ active: false })
    const theirs = eventDigest(rewritten.events[1]!)
    expect(warnings).toEqual([[IGNORED, new Error(`the checkpoint ends at another event than the log's turn/end at seq 2 (digest ${checkpoint.digest}, the log's ${theirs})`)]])
    // A loader that has the event refuses it too.
    expect(() => createMemorySessionLog(seeds(rewritten.events.slice(1)), { checkpoint, agentId: 'a' })).toThrow(
      new Error(`createMemorySessionLog: the checkpoint ends at another event than the log's turn/end at seq 2 (digest ${checkpoint.digest}, the log's ${theirs})`),
    )
  })

  it("R76: the digest reads the event's data as JSON with its keys sorted, so a store that reorders them (jsonb) still matches", () => {
    const log = createMemorySessionLog([{ type: 'turn/end', data: { b: [{ y: 1, x: 2 }], a: 'é', c: undefined } }])
    const checkpoint = checkpointAt(log.events, 1)!
    const reread = createMemorySessionLog([{ type: 'turn/end', data: { a: 'é', b: [{ x: 2, y: 1 }] } }], { checkpoint, agentId: 'a' })
    expect(reread.checkpoint).toEqual(checkpoint)
    expect(checkpoint.digest).toMatch(/^fnv1a64:[0-9a-f]{16}$/)
  })

  it('R76: the digest is 64-bit FNV-1a over the UTF-8 of the canonical JSON: JSON.stringify of the value with every object\'s keys sorted', () => {
    const utf8 = (text: string) => new TextEncoder().encode(text)
    // The published FNV-1a 64 test vectors.
    expect([fnv1a64(utf8('')), fnv1a64(utf8('a')), fnv1a64(utf8('foobar'))]).toEqual(['cbf29ce484222325', 'af63dc4c8601ec8c', '85944171f73967e8'])
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        // JSON.stringify's content…
        expect(JSON.parse(canonicalJson(value))).toEqual(JSON.parse(JSON.stringify(value)))
        // …in one order: the same value with its keys in another (a store that reorders them) is written, and digested, the same.
        const reordered = JSON.parse(JSON.stringify(value, (_key, inner: unknown) => (typeof inner === 'object' && inner !== null && !Array.isArray(inner) ? Object.fromEntries(Object.entries(inner).reverse()) : inner)))
        expect(canonicalJson(reordered)).toBe(canonicalJson(value))
        expect(eventDigest({ seq: 3, type: 't', data: reordered })).toBe(eventDigest({ seq: 3, type: 't', data: value }))
      }),
      { numRuns: 300 },
    )
    // Sorted as strings, whatever order JavaScript keeps integer-like keys in.
    expect(canonicalJson({ b: 1, 10: 2, 2: 3, '': 4, a: { d: 5, c: 6 } })).toBe('{"":4,"10":2,"2":3,"a":{"c":6,"d":5},"b":1}')
    expect(canonicalJson({ b: undefined, a: [undefined, () => 1, Number.NaN], d: new Date(0), c: new String('x') })).toBe('{"a":[null,null,null],"c":"x","d":"1970-01-01T00:00:00.000Z"}')
    const cycle: Record<string, unknown> = {}
    cycle.self = cycle
    expect(() => canonicalJson(cycle)).toThrow(TypeError)
    expect(() => canonicalJson({ n: 1n })).toThrow(TypeError)
  })

  it("R76: a log that holds only the events after its checkpoint cannot check it, so it cannot attach; a loader loads the checkpoint's own event too", () => {
    const whole = createMemorySessionLog([{ type: 'plan/mode', data: { active: true } }, { type: 'turn/end', data: {} }, { type: 'turn/start', data: {} }])
    const checkpoint = checkpointAt(whole.events, 2)!
    const afterOnly: SessionLog = { ...whole, events: whole.events.slice(2), checkpoint }
    const planMode = createPlanMode({ section: SECTION, logger: { warn() {} } })
    expect(() => planMode.get({ id: 'a', session: afterOnly })).toThrow(
      new Error(
        'plan-mode: the session log holds no event from seq 1 and its checkpoint cannot be used (the log does not hold the event the checkpoint ends at (seq 2), which a loader must load with the events after it); load the whole log',
      ),
    )
    expect(() => createMemorySessionLog(seeds(whole.events.slice(2)), { checkpoint, agentId: 'a' })).toThrow(
      new Error('createMemorySessionLog: the checkpoint covers seq 2 (turn/end), but the log holds turn/start at seq 2'),
    )
    expect(() => createMemorySessionLog([], { checkpoint, agentId: 'a' })).toThrow(
      new Error('createMemorySessionLog: the log does not hold the event the checkpoint ends at (seq 2), which a loader must load with the events after it'),
    )
    expect(() => createMemorySessionLog(seeds(whole.events.slice(1)), { checkpoint })).toThrow(
      new TypeError('createMemorySessionLog: a checkpoint needs the agentId it was loaded for'),
    )
    const loaded = createMemorySessionLog(seeds(whole.events.slice(1)), { checkpoint, agentId: 'a' })
    expect(loaded.events.map((event) => event.seq)).toEqual([2, 3])
    expect(planMode.get({ id: 'a', session: loaded })).toEqual({ active: true })
  })

  it("R76, R62: a log event at the checkpoint's seq whose data cannot be read makes the checkpoint unusable, never an exception", () => {
    const log = createMemorySessionLog([{ type: 'plan/mode', data: { active: true } }, { type: 'turn/end', data: {} }])
    const checkpoint = checkpointAt(log.events, 2)!
    const hostile = Object.defineProperty({}, 'note', {
      enumerable: true,
      get() {
        throw new Error('boom')
      },
    })
    const events = [log.events[0]!, Object.freeze({ seq: 2, type: 'turn/end', data: hostile })]
    const warnings: unknown[][] = []
    const planMode = createPlanMode({ section: SECTION, logger: { warn: (...args: unknown[]) => warnings.push(args) } })
    expect(planMode.get({ id: 'a', session: { ...log, events, checkpoint } })).toEqual({ active: true })
    expect(warnings).toEqual([[IGNORED, new Error("the log's turn/end at seq 2 cannot be read: boom")]])
  })

  it("R76: a host's loader refuses another session's checkpoint, so it loads the whole log instead (regression: the memory log took it)", async () => {
    const copied = await approvedCheckpoint()
    const events = planningLog().events.slice(4).map(({ type, data }) => ({ type, data })) // from the checkpoint's seq 5
    expect(() => createMemorySessionLog(events, { checkpoint: copied, agentId: 'agent-b' })).toThrow(
      new Error('createMemorySessionLog: the checkpoint is of agent "agent-a", not "agent-b"'),
    )
  })
})

describe('R76, R102: where no checkpoint is made', () => {
  const TITLE = 'Ship the importer'
  const V1 = `# ${TITLE}\n\n1. Parse the CSV.`
  const V2 = `${V1}\n2. Store the rows.`
  const answer = (label: string, custom?: string) => ({ answers: [{ id: 'plan-review', selected: [label], ...(custom === undefined ? {} : { custom }) }] })

  it('R76, R102: none while a handoff is due: the checkpoint due at a turn/end before the handoff\'s request is not made; the next one is, after it', async () => {
    const store = createMemoryCheckpointStore()
    let reply = answer('Keep planning', 'Keep a backup.')
    const planMode = createPlanMode({ section: SECTION, decisions: 'all', review: { ask: async () => reply }, checkpoints: { store, every: 1 } })
    const session = createMemorySessionLog([{ type: 'plan/mode', data: { active: true } }, { type: 'turn/start', data: {} }])
    const agent: PlanAgent = { id: 'a', session }
    await expect(planMode.exitTool.execute({ plan: V1 }, { agent })).rejects.toThrow('The user chose to keep planning; their feedback: Keep a backup.')
    reply = answer('Approve in a fresh context')
    expect(await planMode.exitTool.execute({ plan: V2 }, { agent })).toEqual({ approved: true })
    await planMode.stepBoundary(agent) // the leave's flush; the step was then aborted before its request
    session.append('turn/end', {}) // seq 6: a checkpoint is due, and a handoff too
    const due = dueHandoff(session.events, planMode.approvedPlan(agent))
    expect(due).toMatchObject({ version: 2, decisions: [{ version: 1, feedback: 'Keep a backup.' }] })
    expect(createCheckpoint('a', replayPlanLog(session.events), session.events)).toBeNull()
    session.append('turn/start', {})
    session.append('request/header', { step: 0 }) // the handoff is made here
    session.append('turn/end', {}) // seq 9
    await planMode.dispose()
    expect(store.saved.get('a')).toMatchObject({ seq: 9, approved: { title: TITLE, plan: V2, seq: 4, fresh: true } })
  })

  it("R76, R96: none while the durable review open was presented before the current episode began: its version and its episode's decisions are read from before", () => {
    const log = createMemorySessionLog([
      { type: 'plan/mode', data: { active: true } },
      { type: 'plan/review', data: { outcome: 'requested', reviewId: 'r1', title: TITLE, plan: V1 } },
      { type: 'plan/review', data: { outcome: 'keep-planning', reviewId: 'r1', title: TITLE, plan: V1, feedback: 'Keep a backup.' } },
      { type: 'plan/review', data: { outcome: 'requested', reviewId: 'r2', title: TITLE, plan: V2 } },
      { type: 'plan/mode', data: { active: false } }, // another writer's: a new episode, r2 still open
      { type: 'turn/end', data: {} },
    ])
    expect(createCheckpoint('a', replayPlanLog(log.events), log.events)).toBeNull()
    expect(createCheckpoint('a', replayPlanLog(log.events.slice(0, 4)), log.events.slice(0, 4))).toMatchObject({
      episode: { version: 2, plan: V2, decisions: [{ version: 1, feedback: 'Keep a backup.' }], open: [{ reviewId: 'r2', version: 2 }] },
    })
    // What a checkpoint at the turn/end would have lost: the approval's v2 and v1's feedback.
    log.append('plan/review', { outcome: 'approved', reviewId: 'r2', title: TITLE, plan: V2, fresh: true })
    expect(dueHandoff(log.events, { title: TITLE, plan: V2, seq: 7, fresh: true })).toMatchObject({ version: 2, decisions: [{ version: 1, feedback: 'Keep a backup.' }] })
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
    await store.save('agent/1', checkpointAt(log.events, 2)!)
    expect(JSON.parse(await readFile(join(directory, 'nested', 'agent%2F1.json'), 'utf8'))).toEqual(checkpointAt(log.events, 2))
    expect(await store.load('agent/1')).toEqual(checkpointAt(log.events, 2))
  })

  it('R76: a damaged file is refused with its name', async () => {
    const store = openFileCheckpointStore(directory)
    await writeFile(join(directory, 'b.json'), '{"version":')
    await expect(store.load('b')).rejects.toThrow(new Error(`${join(directory, 'b.json')}: not valid JSON`))
  })
})

describe('R76, R58, R80: a late answer\'s approval reads the same from any checkpoint', () => {
  /** A durable review closed by keep-planning, then a late approval of it (a lost answer's record, R80), then a step. */
  const LOG = [
    { type: 'plan/mode', data: { active: true } },
    { type: 'plan/review', data: { outcome: 'requested', reviewId: 'r1', title: 'T', plan: '# v1' } },
    { type: 'plan/review', data: { outcome: 'keep-planning', reviewId: 'r1', title: 'T', plan: '# v1' } },
    { type: 'plan/review', data: { outcome: 'approved', reviewId: 'r1', title: 'T', plan: '# v1' } },
    { type: 'request/header', data: {} },
    { type: 'turn/start', data: {} },
  ]

  it('R76: a late approval of a review already closed leaves the projection as it leaves attach, from the whole log and from a checkpoint after it and its tail (regression: pending true from the whole log, false from the checkpoint)', () => {
    const events = createMemorySessionLog(LOG).events
    const whole = events.reduce(planProjection.apply, planProjection.init())
    expect(planProjection.view(whole)).toEqual({ active: true, pending: false })
    expect(whole).toEqual(replayPlanLog(events).projection)
    for (let k = 1; k <= LOG.length; k++) {
      const checkpoint = checkpointAt(events, k)!
      const fromCheckpoint = events.slice(k).reduce(planProjection.apply, checkpoint.projection)
      expect(fromCheckpoint, `checkpoint after ${k} events`).toEqual(whole)
    }
    // While the review is open, the projection keeps its id: its first closing record is the one that counts.
    expect(events.slice(0, 2).reduce(planProjection.apply, planProjection.init())).toEqual({ active: true, runs: {}, kept: null, openReview: 'r1' })
  })
})

describe('R76: checkpoints stored before the log had one reader (#25) are still read', () => {
  /** A log with a keep-planning, a durable review's request, its fresh approval told in the result and an open /plan run. */
  const LOG = [
    { type: 'plan/mode', data: { active: true } },
    { type: 'turn/start', data: { trigger: 'user' } },
    { type: 'request/header', data: { step: 0 } },
    { type: 'plan/review', data: { outcome: 'keep-planning', title: 'T', plan: '# v1', feedback: 'smaller' } },
    { type: 'plan/review', data: { outcome: 'requested', reviewId: 'r1', title: 'T', plan: '# v2', callId: 'c1' } },
    { type: 'plan/review', data: { outcome: 'approved', reviewId: 'r1', title: 'T', plan: '# v2', fresh: true, toldInResult: true } },
    { type: 'request/header', data: { step: 1 } },
    { type: 'command/run', data: { commandId: 'x', name: 'plan', args: '' } },
    { type: 'turn/end', data: { reason: 'stop' } },
    { type: 'command/done', data: { commandId: 'x', kind: 'success' } },
    { type: 'plan/mode', data: { active: false } },
    { type: 'turn/start', data: { trigger: 'user' } },
  ]
  /**
   * The bytes the code before #25 (commit 267efa9) saved after events 5 and 9 of `LOG`, as a
   * store keeps them: one with a durable review open in its episode, one with a fresh approval.
   */
  const STORED: Record<number, string> = {
    5: '{"version":"xstate-plan-mode/checkpoint@3","agentId":"agent-1","seq":5,"type":"plan/review","digest":"fnv1a64:d2a4a07bd18105e7","projection":{"active":true,"runs":{},"kept":null},"openTurn":true,"told":true,"review":{"open":{"reviewId":"r1","title":"T","plan":"# v2","version":5,"callId":"c1"},"closed":null,"news":null},"episode":{"version":2,"plan":"# v2","decisions":[{"version":1,"feedback":"smaller"}],"open":[{"reviewId":"r1","version":2}]}}',
    9: '{"version":"xstate-plan-mode/checkpoint@3","agentId":"agent-1","seq":9,"type":"turn/end","digest":"fnv1a64:b9a088a9aff89c37","projection":{"active":true,"runs":{"x":true},"kept":false},"openTurn":false,"told":true,"review":{"open":null,"closed":{"reviewId":"r1","outcome":"approved"},"news":null},"approved":{"title":"T","plan":"# v2","seq":6,"fresh":true},"episode":{"version":2,"plan":"# v2","decisions":[{"version":1,"feedback":"smaller"}]}}',
  }

  it.each([5, 9])('R76: the checkpoint stored after event %i is the one made today, byte for byte (but the open review the projection keeps since, R58), and attach from it and its tail reads the whole log', (k) => {
    const whole = createMemorySessionLog(LOG)
    const made = createCheckpoint('agent-1', replayPlanLog(whole.events.slice(0, k)), whole.events.slice(0, k))!
    // R58: the projection keeps the open durable review's id; a stored checkpoint without it reads it from its review fold.
    const { openReview, ...projection } = made.projection
    expect(openReview).toBe(k === 5 ? 'r1' : undefined)
    expect(JSON.stringify({ ...made, projection })).toBe(STORED[k])
    const read = readCheckpoint(JSON.parse(STORED[k]!), 'agent-1')
    expect('problem' in read ? read : read.projection).toEqual(made.projection)
    const warn = () => {
      throw new Error('the stored checkpoint was ignored')
    }
    for (let end = k; end <= LOG.length; end++) {
      const upTo = createMemorySessionLog(LOG.slice(0, end))
      const tail = createMemorySessionLog(LOG.slice(k - 1, end), { checkpoint: JSON.parse(STORED[k]!), agentId: 'agent-1' })
      expect(restoreSession(tail, 'agent-1', warn).restore).toEqual(restorePlanLog(upTo.events))
      expect(approvedPlanOf(tail, 'agent-1')).toEqual(replayPlanLog(upTo.events).approved)
      const full = planHistory(upTo.events).filter((plan) => plan.seq > k)
      expect(planHistory(tail.events, episodeBefore(tail, 'agent-1'))).toEqual(full)
    }
  })
})
