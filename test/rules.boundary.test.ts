import { describe, expect, it } from 'vitest'
import { createPlanMode } from '../src/index.js'
import { APPROVE, createHarness, ENTERING, LEAVING, PLAN, SECTION } from './helpers.js'

describe('§4 step boundary', () => {
  it('R14: one boundary per new step: each call is a step, the log records one flip', async () => {
    const h = createHarness()
    h.startTurn()
    await h.step()
    await h.planMode.set(h.agent, true)
    expect(await h.step()).toEqual({ section: SECTION, notices: [ENTERING] })
    // A retry of the same request does not call stepBoundary again: the host re-sends as is.
    expect(await h.step()).toEqual({ section: SECTION, notices: [] })
    expect(h.planModeLines()).toEqual([true])
  })

  it('R15: an aborted signal: no append, P kept, the result describes F', async () => {
    const h = createHarness()
    h.startTurn()
    await h.step()
    await h.planMode.set(h.agent, true)
    const controller = new AbortController()
    controller.abort()
    const result = await h.planMode.stepBoundary(h.agent, { signal: controller.signal })
    expect(result).toEqual({ section: '', messages: [] })
    expect(h.planModeLines()).toEqual([])
    expect(h.planMode.get(h.agent)).toEqual({ active: false, pending: true })
    // K unchanged too: the next real boundary narrates the entry once.
    expect(await h.step()).toEqual({ section: SECTION, notices: [ENTERING] })
  })

  it('R16: P whose target another writer logged is dropped at once; the boundary appends nothing (net zero)', async () => {
    const h = createHarness()
    h.startTurn()
    await h.planMode.set(h.agent, true)
    // Another writer logs the same flip meanwhile: P's target now equals F, and P goes.
    h.log.append('plan/mode', { active: true })
    expect(h.planMode.get(h.agent)).toEqual({ active: true })
    await h.planMode.stepBoundary(h.agent)
    expect(h.planModeLines()).toEqual([true])
    expect(h.planMode.get(h.agent)).toEqual({ active: true })
  })

  it('R16: P with target ≠ F appends plan/mode then drops P', async () => {
    const h = createHarness()
    h.startTurn()
    await h.planMode.set(h.agent, true)
    await h.planMode.stepBoundary(h.agent)
    expect(h.planModeLines()).toEqual([true])
    expect(h.planMode.get(h.agent)).toEqual({ active: true })
  })

  it('R17: the append lands before anything the host logs for that step', async () => {
    const h = createHarness({ async: true })
    h.startTurn()
    await h.planMode.set(h.agent, true)
    await h.step()
    expect(h.lines()).toEqual(['turn/start {}', 'plan/mode {"active":true}', 'request/header {}'])
  })

  it('R18: the section is the configured text when the state in force is active, else empty', async () => {
    const h = createHarness()
    h.startTurn()
    expect((await h.planMode.stepBoundary(h.agent)).section).toBe('')
    await h.planMode.set(h.agent, true)
    expect((await h.planMode.stepBoundary(h.agent)).section).toBe(SECTION)
  })

  it('R18: a failed flush runs the step under the logged state', async () => {
    const h = createHarness()
    h.startTurn()
    await h.planMode.set(h.agent, true)
    h.log.failNext('plan/mode', 'throw')
    expect(await h.planMode.stepBoundary(h.agent)).toEqual({ section: '', messages: [] })
  })

  it('R19: a failed flush (sync throw) is contained: one warning, P kept, no notice, K unchanged; the next boundary converges', async () => {
    const h = createHarness()
    h.startTurn()
    await h.step()
    await h.planMode.set(h.agent, true)
    h.log.failNext('plan/mode', 'throw')
    expect(await h.step()).toEqual({ section: '', notices: [] })
    expect(h.warnings).toEqual([['plan-mode: step-boundary flush failed', h.log.appendErrors[0]]])
    expect(h.planMode.get(h.agent)).toEqual({ active: false, pending: true })
    expect(h.planMode.actor(h.agent).getSnapshot().status).toBe('active')
    expect(await h.step()).toEqual({ section: SECTION, notices: [ENTERING] })
    expect(h.planModeLines()).toEqual([true])
    expect(h.warnings).toHaveLength(1)
  })

  it('R19: a failed flush (async reject) is contained the same way', async () => {
    const h = createHarness({ async: true })
    h.startTurn()
    await h.step()
    await h.planMode.set(h.agent, true)
    h.log.failNext('plan/mode', 'reject')
    expect(await h.step()).toEqual({ section: '', notices: [] })
    expect(h.warnings).toEqual([['plan-mode: step-boundary flush failed', h.log.appendErrors[0]]])
    expect(h.planMode.actor(h.agent).getSnapshot().status).toBe('active')
    expect(await h.step()).toEqual({ section: SECTION, notices: [ENTERING] })
  })

  it('R19: a throwing logger does not stop the actor either (R62)', async () => {
    const log = createHarness().log
    const planMode = createPlanMode(
      { section: SECTION, logger: { warn: () => { throw new Error('logger down') } } },
    )
    const agent = { id: 'a', session: log }
    log.append('turn/start', {})
    await planMode.set(agent, true)
    log.failNext('plan/mode', 'throw')
    expect((await planMode.stepBoundary(agent)).section).toBe('')
    expect(planMode.actor(agent).getSnapshot().status).toBe('active')
    expect((await planMode.stepBoundary(agent)).section).toBe(SECTION)
  })

  it('R20: one flip, at most one append; later boundaries append nothing', async () => {
    const h = createHarness()
    h.startTurn()
    await h.planMode.set(h.agent, true)
    for (let i = 0; i < 4; i++) await h.step()
    expect(h.planModeLines()).toEqual([true])
  })

  it('R21: section(agent) follows E; section() is empty', async () => {
    const h = createHarness()
    expect(h.planMode.section()).toBe('')
    expect(h.planMode.section(h.agent)).toBe('')
    h.startTurn()
    await h.planMode.set(h.agent, true)
    expect(h.planMode.section(h.agent)).toBe(SECTION)
    await h.step()
    await h.planMode.set(h.agent, false)
    expect(h.planMode.section(h.agent)).toBe('')
    expect(h.planMode.section()).toBe('')
  })
})

describe('§5 narration', () => {
  it('R30: K is undefined until the first boundary or request header', async () => {
    const h = createHarness()
    h.startTurn()
    await h.planMode.set(h.agent, true)
    // First boundary: no notice, the section itself states the mode (R36).
    expect(await h.step()).toEqual({ section: SECTION, notices: [] })
  })

  it('R30: a request/header sets K to the fold at that event', async () => {
    const h = createHarness()
    h.header() // K := inactive, told by the host's own request
    h.startTurn()
    await h.planMode.set(h.agent, true)
    expect(await h.step()).toEqual({ section: SECTION, notices: [ENTERING] })
  })

  it('R30: an approved review sets K to inactive', async () => {
    const h = createHarness()
    await h.planMode.set(h.agent, true)
    h.startTurn()
    await h.step() // K := active
    await h.approvePlan()
    // /plan again before the boundary: the entry is narrated since K is inactive (R35).
    await h.planMode.set(h.agent, true)
    expect(await h.step()).toEqual({ section: SECTION, notices: [ENTERING] })
  })

  it('R31: after a restart K is rebuilt from the last request/header', async () => {
    const h = createHarness()
    h.startTurn()
    await h.step() // header at F = inactive
    h.endTurn()
    expect(await h.planMode.set(h.agent, true)).toBe('committed')
    const restarted = createPlanMode({ section: SECTION })
    const agent = { id: h.agent.id, session: h.log }
    expect(await restarted.stepBoundary(agent)).toEqual({
      section: SECTION,
      messages: [expect.objectContaining({ content: [{ type: 'text', text: ENTERING }] })],
    })
  })

  it('R31: after a restart K is rebuilt from an approved plan/review later than the last header', async () => {
    const h = createHarness({
      seed: [
        { type: 'plan/mode', data: { active: true } },
        { type: 'request/header', data: {} },
        { type: 'plan/review', data: { outcome: 'approved', title: 'P', plan: '# P' } },
        { type: 'plan/mode', data: { active: false } },
        { type: 'plan/mode', data: { active: true } },
      ],
    })
    // K = inactive (the approval), F = active → the next boundary narrates the entry.
    expect((await h.step()).notices).toEqual([ENTERING])
    const k = createHarness({
      seed: [
        { type: 'plan/review', data: { outcome: 'approved', title: 'P', plan: '# P' } },
        { type: 'plan/mode', data: { active: true } },
        { type: 'request/header', data: {} },
      ],
    })
    // The header is later: K = active, nothing to narrate.
    expect((await k.step()).notices).toEqual([])
  })

  it('R32: one notice when the state in force differs from K; none otherwise; never twice', async () => {
    const h = createHarness()
    h.startTurn()
    await h.step()
    await h.planMode.set(h.agent, true)
    expect((await h.step()).notices).toEqual([ENTERING])
    expect((await h.step()).notices).toEqual([])
    await h.planMode.set(h.agent, false)
    expect((await h.step()).notices).toEqual([LEAVING])
    expect((await h.step()).notices).toEqual([])
  })

  it('R32: a round trip (on, then off) before the next step narrates nothing', async () => {
    const h = createHarness()
    h.startTurn()
    await h.step()
    expect(await h.planMode.set(h.agent, true)).toBe('queued')
    expect(await h.planMode.set(h.agent, false)).toBe('cancelled')
    expect(await h.step()).toEqual({ section: '', notices: [] })
    // Idle round trip: two real flips, yet the model was never told in between.
    h.endTurn()
    await h.planMode.set(h.agent, true)
    await h.planMode.set(h.agent, false)
    h.startTurn()
    expect(await h.step()).toEqual({ section: '', notices: [] })
    expect(h.planModeLines()).toEqual([true, false])
  })

  it('R33: notice texts are exact', async () => {
    const h = createHarness()
    h.startTurn()
    await h.step()
    await h.planMode.set(h.agent, true)
    const enter = await h.planMode.stepBoundary(h.agent)
    await h.planMode.set(h.agent, false)
    const leave = await h.planMode.stepBoundary(h.agent)
    expect(enter.messages.map((m) => (m.content[0] as { text: string }).text)).toEqual([
      'The user switched this session to plan mode.',
    ])
    expect(leave.messages.map((m) => (m.content[0] as { text: string }).text)).toEqual([
      'The user switched this session back to the default mode.',
    ])
  })

  it('R34: a notice is a user message from the plan-mode plugin with a fresh id', async () => {
    const h = createHarness()
    h.startTurn()
    await h.step()
    await h.planMode.set(h.agent, true)
    const [first] = (await h.planMode.stepBoundary(h.agent)).messages
    await h.planMode.set(h.agent, false)
    await h.planMode.stepBoundary(h.agent)
    await h.planMode.set(h.agent, true)
    const [second] = (await h.planMode.stepBoundary(h.agent)).messages
    expect(first).toEqual({
      id: expect.any(String),
      role: 'user',
      content: [{ type: 'text', text: ENTERING }],
      source: { kind: 'plugin', plugin: 'plan-mode', form: 'notice', summary: ENTERING },
    })
    expect(first!.id).not.toBe('')
    expect(second!.id).not.toBe(first!.id)
  })

  it('R35: an approved exit narrates nothing at its boundary', async () => {
    const h = createHarness()
    await h.planMode.set(h.agent, true)
    h.startTurn()
    await h.step()
    await h.approvePlan()
    expect(await h.step()).toEqual({ section: '', notices: [] })
    expect(h.planModeLines()).toEqual([true, false])
  })

  it('R35: re-entering with /plan after an approval in the same step narrates the entry', async () => {
    const h = createHarness()
    await h.planMode.set(h.agent, true)
    h.startTurn()
    await h.step()
    await h.approvePlan()
    expect(await h.planMode.command.run({ agent: h.agent, rawInput: '' })).toEqual({
      kind: 'success',
      text: 'Plan mode exit cancelled. Use /plan off to leave.',
    })
    expect(await h.step()).toEqual({ section: SECTION, notices: [ENTERING] })
    expect(h.planModeLines()).toEqual([true])
  })

  it('R36: no notice before K is defined; the first request carries the section', async () => {
    const h = createHarness({ seed: [{ type: 'plan/mode', data: { active: true } }] })
    h.startTurn()
    expect(await h.step()).toEqual({ section: SECTION, notices: [] })
  })
})
