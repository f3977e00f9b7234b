import { describe, expect, it } from 'vitest'
import {
  createMemorySessionLog,
  createPlanMode,
  foldPlanMode,
  validatePlanModeEvent,
  type SessionEvent,
} from '../src/index.js'
import { createHarness, SECTION } from './helpers.js'

const ev = (seq: number, type: string, data: unknown): SessionEvent => ({ seq, type, data })

describe('§2 durable state', () => {
  it('R1: the only durable fact is plan/mode with data exactly { active }', async () => {
    const h = createHarness()
    await h.planMode.set(h.agent, true)
    expect(h.log.events).toHaveLength(1)
    expect(h.log.events[0]!.type).toBe('plan/mode')
    expect(h.log.events[0]!.data).toStrictEqual({ active: true })
  })

  it('R2: foldPlanMode is the last plan/mode in [0, end), false when none', () => {
    const events = [
      ev(1, 'turn/start', {}),
      ev(2, 'plan/mode', { active: true }),
      ev(3, 'message', {}),
      ev(4, 'plan/mode', { active: false }),
      ev(5, 'plan/mode', { active: true }),
    ]
    expect(foldPlanMode([])).toBe(false)
    expect(foldPlanMode(events)).toBe(true)
    expect(foldPlanMode(events, 0)).toBe(false)
    expect(foldPlanMode(events, 1)).toBe(false)
    expect(foldPlanMode(events, 2)).toBe(true)
    expect(foldPlanMode(events, 4)).toBe(false)
    expect(foldPlanMode(events, 99)).toBe(true)
  })

  it('R3: no other event changes F, and the service never appends a plan/mode equal to F', async () => {
    const h = createHarness()
    for (const type of ['plan/review', 'command/run', 'command/done', 'turn/start', 'turn/end', 'request/header', 'x']) {
      h.log.append(type, { active: true, outcome: 'approved' })
    }
    expect(h.planMode.get(h.agent)).toEqual({ active: false })
    await h.planMode.set(h.agent, false)
    await h.planMode.stepBoundary(h.agent)
    expect(h.planModeLines()).toEqual([])
    h.endTurn()
    await h.planMode.set(h.agent, true)
    await h.planMode.set(h.agent, true)
    await h.planMode.stepBoundary(h.agent)
    expect(h.planModeLines()).toEqual([true])
  })

  it('R4: a resumed session recovers F; a new agent starts inactive; a fork inherits its seed', async () => {
    const h = createHarness()
    expect(h.planMode.get(h.agent)).toEqual({ active: false })
    await h.planMode.set(h.agent, true)
    const resumed = createPlanMode({ section: SECTION })
    expect(resumed.get({ id: 'agent-1', session: h.log })).toEqual({ active: true })
    const fork = createMemorySessionLog(h.log.events)
    expect(resumed.get({ id: 'fork', session: fork })).toEqual({ active: true })
    const early = createMemorySessionLog([])
    expect(resumed.get({ id: 'fresh', session: early })).toEqual({ active: false })
  })

  it('R5: idle or open turn comes from the log alone', async () => {
    const h = createHarness()
    h.startTurn()
    expect(await h.planMode.set(h.agent, true)).toBe('queued')
    h.endTurn()
    expect(await h.planMode.set(h.agent, false)).toBe('cancelled')
    expect(await h.planMode.set(h.agent, true)).toBe('committed')
    // A turn/start logged before attach is an open turn too.
    const seeded = createHarness({ seed: [{ type: 'turn/start', data: {} }] })
    expect(await seeded.planMode.set(seeded.agent, true)).toBe('queued')
  })

  it('R6: one pending selection per agent; a new one replaces the old', async () => {
    const h = createHarness()
    h.startTurn()
    expect(await h.planMode.set(h.agent, true)).toBe('queued')
    expect(h.planMode.get(h.agent)).toEqual({ active: false, pending: true })
    expect(await h.planMode.set(h.agent, false)).toBe('cancelled')
    expect(h.planMode.get(h.agent)).toEqual({ active: false })
  })

  it('R6: selections of two and three agents at once are independent', async () => {
    const planMode = createPlanMode({ section: SECTION, logger: { warn() {} } })
    const agents = ['a', 'b', 'c'].map((id) => ({ id, session: createMemorySessionLog() }))
    for (const agent of agents) agent.session.append('turn/start', {})
    const [a, b, c] = agents as [(typeof agents)[0], (typeof agents)[0], (typeof agents)[0]]
    expect(await Promise.all([planMode.set(a, true), planMode.set(b, true), planMode.set(c, false)])).toEqual([
      'queued',
      'queued',
      'noop',
    ])
    expect(await planMode.set(b, false)).toBe('cancelled')
    expect([a, b, c].map((agent) => planMode.get(agent))).toEqual([
      { active: false, pending: true },
      { active: false },
      { active: false },
    ])
    const [ra, rb] = await Promise.all([planMode.stepBoundary(a), planMode.stepBoundary(b)])
    expect([ra.section, rb.section]).toEqual([SECTION, ''])
    expect(a.session.events.filter((e) => e.type === 'plan/mode')).toHaveLength(1)
    expect(b.session.events.filter((e) => e.type === 'plan/mode')).toHaveLength(0)
    expect(c.session.events.filter((e) => e.type === 'plan/mode')).toHaveLength(0)
  })
})

describe('§3 get / set', () => {
  it('R7: get is { active: F } without P and { active: F, pending: target } with P', async () => {
    const h = createHarness({ seed: [{ type: 'plan/mode', data: { active: true } }] })
    expect(h.planMode.get(h.agent)).toStrictEqual({ active: true })
    h.startTurn()
    await h.planMode.set(h.agent, false)
    expect(h.planMode.get(h.agent)).toStrictEqual({ active: true, pending: false })
  })

  it('R8: set(x) with x equal to E is a noop and changes nothing', async () => {
    const h = createHarness()
    expect(await h.planMode.set(h.agent, false)).toBe('noop')
    h.startTurn()
    await h.planMode.set(h.agent, true)
    const before = h.log.events.length
    expect(await h.planMode.set(h.agent, true)).toBe('noop')
    expect(h.planMode.get(h.agent)).toEqual({ active: false, pending: true })
    expect(h.log.events.length).toBe(before)
  })

  it('R9: open turn: x ≠ E queues (nothing appended); back to F cancels and leaves no marker', async () => {
    const h = createHarness()
    h.startTurn()
    expect(await h.planMode.set(h.agent, true)).toBe('queued')
    expect(h.planModeLines()).toEqual([])
    expect(await h.planMode.set(h.agent, false)).toBe('cancelled')
    expect(h.planMode.get(h.agent)).toStrictEqual({ active: false })
    expect(h.planModeLines()).toEqual([])
  })

  it('R10: idle: x ≠ E commits by appending now; back to F cancels without an append', async () => {
    const h = createHarness()
    const result = h.planMode.set(h.agent, true)
    // A synchronous log: the append has landed before `set` even resolves.
    expect(h.lines()).toEqual(['plan/mode {"active":true}'])
    expect(await result).toBe('committed')
    expect(h.planMode.get(h.agent)).toStrictEqual({ active: true })
    // A selection left pending by a finished turn is cancelled by choosing F while idle.
    h.startTurn()
    expect(await h.planMode.set(h.agent, false)).toBe('queued')
    h.endTurn()
    expect(await h.planMode.set(h.agent, true)).toBe('cancelled')
    expect(h.planModeLines()).toEqual([true])
  })

  it('R10: with an asynchronous log, set resolves committed only after the append, and get already shows it', async () => {
    const h = createHarness({ async: true })
    const result = await h.planMode.set(h.agent, true)
    expect(result).toBe('committed')
    expect(h.planMode.get(h.agent)).toStrictEqual({ active: true })
    expect(h.planModeLines()).toEqual([true])
  })

  it('R11: a failed idle append (sync throw) rejects with the log error; P and F unchanged; the actor keeps working', async () => {
    const h = createHarness()
    h.log.failNext('plan/mode', 'throw')
    const error = await h.planMode.set(h.agent, true).catch((e: unknown) => e)
    expect(error).toBe(h.log.appendErrors[0])
    expect((error as Error).message).toBe('append of plan/mode failed')
    expect(h.planMode.get(h.agent)).toStrictEqual({ active: false })
    expect(h.planMode.actor(h.agent).getSnapshot().status).toBe('active')
    expect(await h.planMode.set(h.agent, true)).toBe('committed')
    expect(await h.planMode.stepBoundary(h.agent)).toEqual({ section: SECTION, messages: [] })
  })

  it('R11: a failed idle append (async reject) rejects with that error and the next boundary works', async () => {
    const h = createHarness({ async: true })
    h.log.failNext('plan/mode', 'reject')
    const error = await h.planMode.set(h.agent, true).catch((e: unknown) => e)
    expect(error).toBe(h.log.appendErrors[0])
    expect(h.planMode.get(h.agent)).toStrictEqual({ active: false })
    expect(h.planMode.actor(h.agent).getSnapshot().status).toBe('active')
    expect((await h.planMode.stepBoundary(h.agent)).section).toBe('')
    expect(h.planModeLines()).toEqual([])
  })

  it('R12: set never starts a turn; a selection pending at turn end applies at the next turn’s first boundary', async () => {
    const h = createHarness()
    h.startTurn()
    await h.step()
    await h.planMode.set(h.agent, true)
    h.endTurn()
    expect(h.lines().filter((l) => l.startsWith('turn/'))).toEqual(['turn/start {}', 'turn/end {}'])
    expect(h.planMode.get(h.agent)).toEqual({ active: false, pending: true })
    h.startTurn()
    const step = await h.step()
    expect(step).toEqual({ section: SECTION, notices: ['The user switched this session to plan mode.'] })
    expect(h.planModeLines()).toEqual([true])
  })

  it('R13: a non-noop selection during a review closes it; a noop does not', async () => {
    const h = createHarness()
    await h.planMode.set(h.agent, true)
    const call = h.planMode.exitTool.execute({ plan: '# P' }, { agent: h.agent })
    await h.review.untilAsked(1)
    expect(await h.planMode.set(h.agent, true)).toBe('noop')
    expect(h.review.requests[0]!.signal.aborted).toBe(false)
    expect(await h.planMode.set(h.agent, false)).toBe('committed')
    await expect(call).rejects.toThrow('The user changed the plan mode directly; the review is closed.')
    expect(h.review.requests[0]!.signal.aborted).toBe(true)
  })
})

describe('§11 R61 validation', () => {
  it('R61: validatePlanModeEvent throws for a non-boolean active; other events pass', () => {
    expect(() => validatePlanModeEvent(ev(1, 'plan/mode', { active: 'yes' }))).toThrow(
      'plan/mode carries invalid active state "yes"; expected a boolean',
    )
    expect(() => validatePlanModeEvent(ev(1, 'plan/mode', {}))).toThrow(
      'plan/mode carries invalid active state undefined; expected a boolean',
    )
    expect(() => validatePlanModeEvent(ev(1, 'plan/mode', { active: 1 }))).toThrow(
      new Error('plan/mode carries invalid active state 1; expected a boolean'),
    )
    expect(() => validatePlanModeEvent(ev(1, 'plan/mode', null))).toThrow(
      'plan/mode carries invalid active state undefined; expected a boolean',
    )
    expect(() => validatePlanModeEvent(ev(1, 'other', { active: 'yes' }))).not.toThrow()
    expect(() => validatePlanModeEvent(ev(1, 'plan/mode', { active: false }))).not.toThrow()
  })

  it('R61: foldPlanMode throws the same on an invalid plan/mode', () => {
    expect(() => foldPlanMode([ev(1, 'plan/mode', { active: null }), ev(2, 'plan/mode', { active: true })])).toThrow(
      'plan/mode carries invalid active state null; expected a boolean',
    )
  })

  it('R61: attaching a log that holds one fails on every call until repaired', async () => {
    const log = createMemorySessionLog([{ type: 'plan/mode', data: { active: 'on' } }])
    const planMode = createPlanMode({ section: SECTION })
    const agent = { id: 'bad', session: log }
    const message = 'plan/mode carries invalid active state "on"; expected a boolean'
    expect(() => planMode.get(agent)).toThrow(message)
    expect(() => planMode.section(agent)).toThrow(message)
    expect(() => planMode.actor(agent)).toThrow(message)
    await expect(planMode.set(agent, true)).rejects.toThrow(message)
    await expect(planMode.stepBoundary(agent)).rejects.toThrow(message)
    await expect(planMode.exitTool.execute({ plan: '# P' }, { agent })).rejects.toThrow(message)
    expect(await planMode.command.run({ agent, rawInput: '' })).toEqual({
      kind: 'error',
      text: `Plan mode could not be changed: ${message}`,
    })
    // Repaired (a new log without the bad event): the agent attaches.
    expect(planMode.get({ id: 'bad', session: createMemorySessionLog() })).toEqual({ active: false })
  })

  it('R61: an invalid plan/mode appended after attach is warned about and ignored', () => {
    const h = createHarness()
    expect(h.planMode.get(h.agent)).toEqual({ active: false })
    h.log.append('plan/mode', { active: 'true' })
    expect(h.planMode.get(h.agent)).toEqual({ active: false })
    expect(h.warnings).toHaveLength(1)
    expect(h.warnings[0]![0]).toBe('plan-mode: invalid plan/mode ignored')
    expect((h.warnings[0]![1] as Error).message).toBe('plan/mode carries invalid active state "true"; expected a boolean')
    expect(h.planMode.actor(h.agent).getSnapshot().status).toBe('active')
  })
})
