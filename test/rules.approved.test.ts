import { afterEach, describe, expect, it } from 'vitest'
import { withPlanMode } from '../src/adapters/ai-sdk.js'
import { createMemoryCheckpointStore, createMemorySessionLog, createPlanMode, headlessReview, type PlanAgent, type PlanCheckpoint, type PlanMode } from '../src/index.js'
import { readCheckpoint } from '../src/log/checkpoint.js'
import { approvedPlanSection } from '../src/plan/review.js'
import { runLoop, scriptedModel } from './fixtures/ai-sdk-model.js'
import { APPROVE, createScriptedReview, PLAN, planningWithReview, SECTION } from './helpers.js'

const TITLE = 'Migrate the database'
const PINNED = `The plan the user approved; carry it out (it stays here even when earlier messages are dropped):\n\n${PLAN}`

const services: PlanMode[] = []
afterEach(async () => {
  await Promise.all(services.splice(0).map((service) => service.dispose()))
})

const planning = () => planningWithReview(services)

describe('R98: the approved plan is state, read from the log', () => {
  it('R98: null before any approval; the approved plan after it, through the leave; null once plan mode is entered again', async () => {
    const { planMode, agent, approve } = await planning()
    expect(planMode.approvedPlan(agent)).toBeNull()
    await approve()
    const approved = { title: TITLE, plan: PLAN, seq: 2 }
    expect(planMode.approvedPlan(agent)).toEqual(approved)
    agent.session.append('turn/start', {})
    await planMode.stepBoundary(agent) // the leave is flushed: plan/mode off does not void it
    expect(planMode.approvedPlan(agent)).toEqual(approved)
    agent.session.append('turn/end', {})
    expect(await planMode.set(agent, true)).toBe('committed')
    expect(planMode.approvedPlan(agent)).toBeNull()
  })

  it('R98: a policy\'s approval says so; after dispose approvedPlan throws like every call naming an agent', async () => {
    const planMode = createPlanMode({ section: SECTION, review: headlessReview({ policy: 'approve' }) })
    const agent: PlanAgent = { id: 'agent-1', session: createMemorySessionLog([{ type: 'plan/mode', data: { active: true } }]) }
    await planMode.exitTool.execute({ plan: PLAN }, { agent })
    expect(planMode.approvedPlan(agent)).toEqual({ title: TITLE, plan: PLAN, seq: 2, by: 'policy' })
    await planMode.dispose()
    expect(() => planMode.approvedPlan(agent)).toThrow('plan-mode service is disposed')
  })

  it('R98, R76: a host that loads the tail after a checkpoint still gets the plan approved before it; a checkpoint without one knows none', async () => {
    const checkpoints = createMemoryCheckpointStore()
    const review = createScriptedReview()
    const planMode = createPlanMode({ section: SECTION, review, checkpoints: { store: checkpoints, every: 1 } })
    services.push(planMode)
    const session = createMemorySessionLog([{ type: 'plan/mode', data: { active: true } }])
    const agent: PlanAgent = { id: 'agent-1', session }
    session.append('turn/start', {})
    const call = planMode.exitTool.execute({ plan: PLAN }, { agent })
    await review.untilAsked(1)
    review.answer(APPROVE)
    await call
    await planMode.stepBoundary(agent)
    session.append('turn/end', {}) // a checkpoint is due here
    planMode.detach(agent)
    await new Promise((resolve) => setTimeout(resolve, 10))
    const saved = (await checkpoints.load('agent-1')) as PlanCheckpoint
    expect(saved.approved).toEqual({ title: TITLE, plan: PLAN, seq: 3 })

    // A later process loads the checkpoint, the event it ends at (the turn/end) and the events after it.
    const loaded = [{ type: 'turn/end', data: {} }, { type: 'turn/start', data: {} }]
    const later = createPlanMode({ section: SECTION })
    services.push(later)
    const tail = createMemorySessionLog(loaded, { checkpoint: saved, agentId: 'agent-1' })
    expect(later.approvedPlan({ id: 'agent-1', session: tail })).toEqual({ title: TITLE, plan: PLAN, seq: 3 })
    const { approved: _approved, ...older } = saved
    const untold = createMemorySessionLog(loaded, { checkpoint: older, agentId: 'agent-1' })
    const another = createPlanMode({ section: SECTION })
    services.push(another)
    expect(another.approvedPlan({ id: 'agent-1', session: untold })).toBeNull()
    expect(readCheckpoint({ ...saved, approved: { title: TITLE, plan: 7, seq: 3 } })).toEqual({
      problem: 'the checkpoint holds no valid fold (projection, openTurn, told, review, approved, episode)',
    })
  })
})

describe('R99: the AI SDK adapter pins the approved plan while it is carried out', () => {
  it('R99: with approvedPlan.pin, every step after the approval carries the plan in its system prompt; none before it, none in plan mode, none without the option', async () => {
    for (const pin of [true, false]) {
      const { planMode, agent, approve } = await planning()
      const plan = withPlanMode({ planMode, agent, system: 'You are a coding agent.', ...(pin ? { approvedPlan: { pin: true } } : {}) })
      const first = scriptedModel([{ text: 'Planning.' }])
      await runLoop('generateText', plan, first.model, [{ role: 'user', content: 'Plan it.' }], 1)
      expect(first.requests()[0]!.system).toBe(`You are a coding agent.\n\n${SECTION}`)
      await approve()
      const second = scriptedModel([{ text: 'Migrating.' }])
      await runLoop('generateText', plan, second.model, [{ role: 'user', content: 'Go.' }], 1)
      expect(second.requests()[0]!.system).toBe(pin ? `You are a coding agent.\n\n${PINNED}` : 'You are a coding agent.')
      await planMode.set(agent, true)
      const third = scriptedModel([{ text: 'Planning again.' }])
      await runLoop('generateText', plan, third.model, [{ role: 'user', content: 'Plan more.' }], 1)
      expect(third.requests()[0]!.system).toBe(`You are a coding agent.\n\n${SECTION}`)
    }
    expect(approvedPlanSection(PLAN)).toBe(PINNED)
  })
})
