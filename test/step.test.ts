import { afterEach, describe, expect, it } from 'vitest'
import { createMemorySessionLog, createPlanMode, type PlanAgent, type PlanMode, type ReviewAnswer } from '../src/index.js'
import { APPROVE, LEAVING, createFaultyLog, createScriptedReview, PLAN, planningWithReview, SECTION } from './helpers.js'

/**
 * `planMode.step` (R14, R18, R93, R99, R102): the boundary with what the step runs under, decided
 * by the service for every framework adapter (the AI SDK's `prepareStep` only carries it into the
 * SDK's step). Texts copied from docs/spec.md.
 */
const TITLE = 'Migrate the database'
const PINNED = `The plan the user approved; carry it out (it stays here even when earlier messages are dropped):\n\n${PLAN}`
const HANDOFF_TEXT = `The user approved this plan (v1) to be carried out in a fresh context: the conversation that produced it was set aside. Carry it out, starting now.\n\nThe plan:\n\n${PLAN}`

const services: PlanMode[] = []
afterEach(async () => {
  await Promise.all(services.splice(0).map((service) => service.dispose()))
})

const texts = (messages: readonly { content: readonly unknown[] }[]) => messages.map((m) => (m.content[0] as { text: string }).text)

const planning = () => planningWithReview(services)

describe('R18, R93: the state in force comes with the step', () => {
  it('R18, R93, R32: a step in plan mode is active with the section; after /plan off it is inactive with no section and the notice', async () => {
    const { planMode, agent } = await planning()
    const entered = await planMode.step(agent) // the first boundary: nothing told before it (R30)
    expect({ ...entered, messages: texts(entered.messages) }).toEqual({ active: true, section: SECTION, messages: [], handoff: null })
    await planMode.set(agent, false)
    const left = await planMode.step(agent)
    expect({ ...left, messages: texts(left.messages) }).toEqual({ active: false, section: '', messages: [LEAVING], handoff: null })
  })

  it('R15, R18: an aborted step changes nothing and runs under the logged state', async () => {
    const { planMode, agent } = await planning()
    agent.session.append('turn/start', {})
    await planMode.set(agent, false) // queued behind the open turn (R9)
    const aborted = await planMode.step(agent, { signal: AbortSignal.abort() })
    expect({ ...aborted, messages: texts(aborted.messages) }).toEqual({ active: true, section: SECTION, messages: [], handoff: null })
    expect(planMode.get(agent)).toEqual({ active: true, pending: false })
  })
})

describe('R99: the pinned approved plan', () => {
  it('R99: with pinApprovedPlan, a step carrying the approved plan out has it as its section; without, none; none before an approval', async () => {
    const { planMode, agent, approve } = await planning()
    expect((await planMode.step(agent, { pinApprovedPlan: true })).section).toBe(SECTION)
    await approve()
    const pinned = await planMode.step(agent, { pinApprovedPlan: true })
    expect({ ...pinned, messages: texts(pinned.messages) }).toEqual({ active: false, section: PINNED, messages: [], handoff: null })
    expect((await planMode.step(agent)).section).toBe('')
    await planMode.set(agent, true) // plan mode entered again: nothing is pinned, the section is back
    expect((await planMode.step(agent, { pinApprovedPlan: true })).section).toBe(SECTION)
  })
  it('R99: a step called while selections are still landing pins nothing once they entered plan mode again (the plan read before its turn is no longer the one approved)', async () => {
    const review = createScriptedReview()
    const planMode = createPlanMode({ section: SECTION, review })
    services.push(planMode)
    const agent: PlanAgent = { id: 'agent-1', session: createFaultyLog([{ type: 'plan/mode', data: { active: true } }], { async: true }) }
    const call = planMode.exitTool.execute({ plan: PLAN }, { agent })
    await review.untilAsked(1)
    review.answer(APPROVE)
    await call
    expect((await planMode.step(agent, { pinApprovedPlan: true })).section).toBe(PINNED) // the approval's leave is flushed (R47)
    // The user enters plan mode and leaves it again; the host's step is called before they landed.
    const entering = planMode.set(agent, true)
    const leaving = planMode.set(agent, false)
    const step = planMode.step(agent, { pinApprovedPlan: true })
    expect(await Promise.all([entering, leaving])).toEqual(['committed', 'committed'])
    expect(planMode.approvedPlan(agent)).toBeNull() // plan mode was entered again since the approval
    expect((await step).section).toBe('')
  })
})

describe('R102: the handoff is the service\'s decision', () => {
  it('R102, R101, R81: a durable approval into a fresh context is handed off at the next step, told by the handoff alone; once a request followed, none', async () => {
    const planMode = createPlanMode({ section: SECTION, review: 'durable', decisions: 'all' })
    services.push(planMode)
    const agent: PlanAgent = { id: 'agent-1', session: createMemorySessionLog([{ type: 'plan/mode', data: { active: true } }]) }
    const { reviewId } = (await planMode.exitTool.execute({ plan: PLAN }, { agent })) as { reviewId: string }
    const fresh: ReviewAnswer = { answers: [{ id: 'plan-review', selected: ['Approve in a fresh context'] }] }
    expect(await planMode.answerReview(agent, reviewId, fresh)).toBe('approved')
    const step = await planMode.step(agent)
    expect(step).toEqual({ active: false, section: '', messages: [], handoff: { title: TITLE, plan: PLAN, version: 1, decisions: [], text: HANDOFF_TEXT } })
    agent.session.append('request/header', { step: 0 })
    expect(await planMode.step(agent)).toEqual({ active: false, section: '', messages: [], handoff: null })
  })

  it('R102, R101: a service without decisions: \'all\' hands nothing off; the boundary tells the approval (R81)', async () => {
    const planMode = createPlanMode({ section: SECTION, review: 'durable' })
    services.push(planMode)
    const agent: PlanAgent = { id: 'agent-1', session: createMemorySessionLog([{ type: 'plan/mode', data: { active: true } }]) }
    const { reviewId } = (await planMode.exitTool.execute({ plan: PLAN }, { agent })) as { reviewId: string }
    expect(await planMode.answerReview(agent, reviewId, APPROVE)).toBe('approved')
    const step = await planMode.step(agent)
    expect({ ...step, messages: texts(step.messages) }).toEqual({
      active: false,
      section: '',
      messages: ['The user approved your plan and plan mode is off; carry out the plan, starting now.'],
      handoff: null,
    })
  })
})
