import { jsonSchema, tool, type ModelMessage } from 'ai'
import { afterEach, describe, expect, it } from 'vitest'
import { withPlanMode } from '../src/adapters/ai-sdk.js'
import { createMemoryCheckpointStore, createMemorySessionLog, createPlanMode, dueHandoff, episodeBefore, planProjection, type PlanAgent, type PlanMode, type ReviewAnswer } from '../src/index.js'
import { type PlanHandoff } from '../src/plan/handoff.js'
import { runLoop, scriptedModel } from './fixtures/ai-sdk-model.js'
import { createFaultyLog, createScriptedReview, PLAN, SECTION } from './helpers.js'

const TITLE = 'Migrate the database'
const LEFT = 'The user left plan mode without carrying out the plan; stop here and wait for their message.'
const answer = (label: string, extra: Partial<ReviewAnswer['answers'][number]> = {}): ReviewAnswer => ({ answers: [{ id: 'plan-review', selected: [label], ...extra }] })

const services: PlanMode[] = []
afterEach(async () => {
  await Promise.all(services.splice(0).map((service) => service.dispose()))
})

/** A channel service offering `decisions`, one agent in plan mode with a turn open. */
async function planning(decisions?: 'all' | 'approve-or-keep') {
  const review = createScriptedReview()
  const planMode = createPlanMode({ section: SECTION, review, ...(decisions ? { decisions } : {}) })
  services.push(planMode)
  const session = createMemorySessionLog([{ type: 'plan/mode', data: { active: true } }, { type: 'turn/start', data: {} }])
  const agent: PlanAgent = { id: 'agent-1', session }
  /** The exit call answered with `given`: its settled outcome. */
  const review1 = async (given: ReviewAnswer, plan = PLAN) => {
    const asked = review.requests.length + 1
    const call = planMode.exitTool.execute({ plan }, { agent }).then(
      (value) => ({ value }),
      (error: Error) => ({ error: error.message }),
    )
    await review.untilAsked(asked)
    review.answer(given)
    return call
  }
  return { planMode, agent, session, review, review1 }
}

const records = (session: { events: readonly { type: string; data: unknown }[] }) => session.events.filter((e) => e.type === 'plan/review').map((e) => e.data)

describe('R101: the whole set of decisions, opt-in per service', () => {
  it("R101, R43: with decisions 'all' the question has four options with exact labels and descriptions; by default two", async () => {
    const all = await planning('all')
    void all.review1(answer('Keep planning'))
    const asked = await all.review.untilAsked(1)
    expect(asked.questions[0].options).toEqual([
      { label: 'Approve', description: 'Leave plan mode; the plan is carried out from the next step.' },
      { label: 'Keep planning', description: 'Stay in plan mode; feedback goes back to the model.' },
      { label: 'Approve in a fresh context', description: 'Leave plan mode; the plan is carried out from the next step, in a fresh context that holds the plan and the decisions made.' },
      { label: 'Leave plan mode', description: 'Leave plan mode without carrying out the plan; the model stops and waits.' },
    ])
    const two = await planning()
    void two.review1(answer('Keep planning'))
    expect((await two.review.untilAsked(1)).questions[0].options.map((o) => o.label)).toEqual(['Approve', 'Keep planning'])
    expect(two.planMode.decisions).toBe('approve-or-keep')
    expect(all.planMode.decisions).toBe('all')
    expect(() => createPlanMode({ section: SECTION, decisions: 'some' as never })).toThrow(
      new TypeError("plan mode option decisions must be 'approve-or-keep' or 'all'; got some"),
    )
  })

  it('R101, R47: Leave plan mode fails the call with the exact text, records left, and leaves at the next boundary without a notice', async () => {
    const { planMode, agent, session, review1 } = await planning('all')
    expect(await review1(answer('Leave plan mode'))).toEqual({ error: LEFT })
    expect(records(session)).toEqual([{ outcome: 'left', title: TITLE, plan: PLAN }])
    expect(planMode.get(agent)).toEqual({ active: true, pending: false })
    const step = await planMode.stepBoundary(agent)
    expect(step).toEqual({ section: '', messages: [] })
    expect(planMode.get(agent)).toEqual({ active: false })
    expect(planMode.approvedPlan(agent)).toBeNull()
    // R58: the projection keeps the leave on its way like an approval's.
    const view = planProjection.view(session.events.slice(0, 3).reduce(planProjection.apply, planProjection.init()))
    expect(view).toEqual({ active: true, pending: true })
  })

  it('R101: Approve in a fresh context approves, recorded with fresh: true; approvedPlan carries it', async () => {
    const { planMode, agent, session, review1 } = await planning('all')
    expect(await review1(answer('Approve in a fresh context'))).toEqual({ value: { approved: true } })
    expect(records(session)).toEqual([{ outcome: 'approved', title: TITLE, plan: PLAN, fresh: true }])
    expect(planMode.approvedPlan(agent)).toEqual({ title: TITLE, plan: PLAN, seq: 3, fresh: true })
  })

  it('R101, R44: the added labels mean keep planning when the service does not offer them, and with custom text or comments always', async () => {
    const two = await planning()
    expect(await two.review1(answer('Leave plan mode'))).toEqual({ error: 'The user chose to keep planning; revise the plan and present it again.' })
    const all = await planning('all')
    expect(await all.review1(answer('Approve in a fresh context', { custom: 'but faster' }))).toEqual({ error: 'The user chose to keep planning; their feedback: but faster' })
    expect(await all.review1(answer('Leave plan mode', { comments: [{ quote: '1. Back up.', text: 'no' }] }))).toEqual({
      error: 'The user chose to keep planning; their feedback: Comments on the plan:\n1. On "1. Back up.": no',
    })
    expect(records(all.session).map((r) => (r as { outcome: string }).outcome)).toEqual(['keep-planning', 'keep-planning'])
  })

  it('R101, R81: a durable leave answered through answerReview resolves left and is told once at the next boundary', async () => {
    const planMode = createPlanMode({ section: SECTION, review: 'durable', decisions: 'all' })
    services.push(planMode)
    const session = createMemorySessionLog([{ type: 'plan/mode', data: { active: true } }, { type: 'turn/start', data: {} }])
    const agent: PlanAgent = { id: 'agent-1', session }
    const { reviewId } = (await planMode.exitTool.execute({ plan: PLAN }, { agent })) as { reviewId: string }
    expect(await planMode.answerReview(agent, reviewId, answer('Leave plan mode'))).toBe('left')
    const step = await planMode.stepBoundary(agent)
    expect(step.section).toBe('')
    expect(step.messages.map((m) => (m.content[0] as { text: string }).text)).toEqual([LEFT])
    expect((await planMode.stepBoundary(agent)).messages).toEqual([])
  })
})

describe('R102: a plan approved into a fresh context is handed off once', () => {
  const readFile = tool({
    description: 'Read a file.',
    inputSchema: jsonSchema<{ path: string }>({ type: 'object', properties: { path: { type: 'string' } }, required: ['path'] }),
    execute: async ({ path }) => `(contents of ${path})`,
  })

  it('R102: the step after the approval starts from one message holding the plan and the decisions; later steps keep only what followed; the host gets the handoff and a transcript to replace its history with', async () => {
    const { planMode, agent, review } = await planning('all')
    const handoffs: PlanHandoff[] = []
    const plan = withPlanMode({ planMode, agent, system: 'You are a coding agent.', tools: { readFile }, approvedPlan: { onHandoff: (h) => handoffs.push(h) } })
    const V2 = `${PLAN}\n3. Verify.`
    const { model, requests } = scriptedModel([
      { toolCalls: [{ name: 'exit_plan_mode', input: { plan: PLAN } }] },
      { toolCalls: [{ name: 'exit_plan_mode', input: { plan: V2 } }] },
      { toolCalls: [{ name: 'readFile', input: { path: 'db/schema.sql' } }] },
      { text: 'Migrated.' },
    ])
    const answers = [answer('Keep planning', { custom: 'Add a verification step.' }), answer('Approve in a fresh context')]
    const answering = (async () => {
      for (let i = 1; i <= 2; i++) {
        await review.untilAsked(i)
        review.answer(answers[i - 1]!)
      }
    })()
    const history: ModelMessage[] = [{ role: 'user', content: 'Plan the migration.' }]
    const turn = await runLoop('generateText', plan, model, history, 6)
    await answering
    const text = [
      'The user approved this plan (v2) to be carried out in a fresh context: the conversation that produced it was set aside. Carry it out, starting now.',
      'Decisions made while planning:\n- v1: Add a verification step.',
      `The plan:\n\n${V2}`,
    ].join('\n\n')
    expect(handoffs).toEqual([{ title: TITLE, plan: V2, version: 2, decisions: [{ version: 1, feedback: 'Add a verification step.' }], text }])
    expect(plan.handoff).toEqual(handoffs[0])
    const [, , third, fourth] = requests()
    expect(third!.userTexts).toEqual([text]) // the fresh context: no earlier user message, no exit call
    expect(third!.raw.prompt.filter((m) => m.role !== 'system')).toHaveLength(1)
    expect(third!.system).toBe('You are a coding agent.')
    expect(fourth!.userTexts).toEqual([text])
    expect(fourth!.toolResults.map((r) => r.toolName)).toEqual(['readFile'])
    // The host's new history: the fresh context's first message, then what followed it.
    expect(turn.messages[0]).toEqual({ role: 'user', content: [{ type: 'text', text }] })
    expect(turn.messages.some((m) => m.role === 'tool' && JSON.stringify(m.content).includes('exit_plan_mode'))).toBe(false)
    // Once: the next call starts no fresh context.
    const next = scriptedModel([{ text: 'Anything else?' }])
    await runLoop('generateText', plan, next.model, [...turn.messages, { role: 'user', content: 'Thanks.' }], 1)
    expect(plan.handoff).toBeNull()
    expect(next.requests()[0]!.userTexts).toEqual([text, 'Thanks.'])
  })
})

describe('R102, R81: a fresh approval not told in the result is told once: by the handoff, or by the boundary', () => {
  const APPROVED_NEWS = 'The user approved your plan and plan mode is off; carry out the plan, starting now.'
  /** A durable service offering every decision; its agent's review answered Approve in a fresh context, not told in the result. */
  async function approvedFresh() {
    const planMode = createPlanMode({ section: SECTION, review: 'durable', decisions: 'all', logger: { warn() {} } })
    services.push(planMode)
    const session = createFaultyLog([{ type: 'plan/mode', data: { active: true } }, { type: 'turn/start', data: {} }])
    const agent: PlanAgent = { id: 'agent-1', session }
    const { reviewId } = (await planMode.exitTool.execute({ plan: PLAN }, { agent })) as { reviewId: string }
    expect(await planMode.answerReview(agent, reviewId, answer('Approve in a fresh context'))).toBe('approved')
    const texts = async (options: { handoff?: boolean } = {}) =>
      (await planMode.stepBoundary(agent, options)).messages.map((m) => (m.content[0] as { text: string }).text)
    return { planMode, agent, session, texts }
  }

  it('R102, R81: a boundary whose request hands the plan off (handoff: true) tells neither the approval nor a leaving notice', async () => {
    const { planMode, agent, texts } = await approvedFresh()
    expect(await texts({ handoff: true })).toEqual([])
    expect(planMode.get(agent)).toEqual({ active: false })
    expect(await texts()).toEqual([]) // told: nothing is left for a later boundary
  })

  it('R102, R19: a boundary with handoff whose flush fails tells nothing and keeps the approval; the next boundary tells it with R81’s text', async () => {
    const { planMode, agent, session, texts } = await approvedFresh()
    session.failNext('plan/mode', 'throw')
    expect(await planMode.stepBoundary(agent, { handoff: true })).toEqual({ section: SECTION, messages: [] })
    session.append('request/header', { step: 0 }) // that step ran in plan mode: nothing was handed off
    expect(await texts()).toEqual([APPROVED_NEWS])
    expect(await texts()).toEqual([])
  })
})

describe('R101, R102, R76: a fresh approval read from a checkpoint and the events after it', () => {
  const V2 = `${PLAN}\n3. Verify.`
  /** A service with a checkpoint store saving at every turn/end, one agent in plan mode, a turn open. */
  async function checkpointed() {
    const store = createMemoryCheckpointStore()
    const review = createScriptedReview()
    const planMode = createPlanMode({ section: SECTION, review, decisions: 'all', checkpoints: { store, every: 1 } })
    services.push(planMode)
    const session = createMemorySessionLog([{ type: 'plan/mode', data: { active: true } }, { type: 'turn/start', data: {} }])
    const agent: PlanAgent = { id: 'agent-1', session }
    const exit = async (given: ReviewAnswer, plan: string) => {
      const asked = review.requests.length + 1
      const call = planMode.exitTool.execute({ plan }, { agent }).catch((error: Error) => error.message)
      await review.untilAsked(asked)
      review.answer(given)
      return call
    }
    /** A later process: the agent's checkpoint and the events after it (R76), on a new service. */
    const reload = async () => {
      await planMode.dispose() // waits for the checkpoint's write
      const checkpoint = (await store.load('agent-1')) as { seq: number }
      // The checkpoint's own event and those after it.
      const tail = createMemorySessionLog(session.events.slice(checkpoint.seq - 1).map(({ type, data }) => ({ type, data })), { checkpoint, agentId: 'agent-1' })
      const later = createPlanMode({ section: SECTION, decisions: 'all' })
      services.push(later)
      return { later, restarted: { id: 'agent-1', session: tail } as PlanAgent, checkpoint }
    }
    return { planMode, agent, session, exit, reload }
  }

  it('R101, R98, R76: approvedPlan read from a checkpoint after "Approve in a fresh context" carries fresh: true, as from the whole log (regression: the checkpoint dropped fresh)', async () => {
    const { planMode, agent, session, exit, reload } = await checkpointed()
    expect(await exit(answer('Approve in a fresh context'), PLAN)).toEqual({ approved: true })
    await planMode.stepBoundary(agent) // the leave's flush
    session.append('request/header', { step: 1 }) // the handoff was made at this request
    session.append('turn/end', {}) // a checkpoint is due here
    const whole = planMode.approvedPlan(agent)
    expect(whole).toEqual({ title: TITLE, plan: PLAN, seq: 3, fresh: true })
    const { later, restarted, checkpoint } = await reload()
    expect(checkpoint.seq).toBe(session.events.length)
    expect(later.approvedPlan(restarted)).toEqual(whole)
  })

  it('R102, R96, R76: the handoff of a plan approved after a checkpoint tells its version and the decisions made before the checkpoint (regression: v1\'s feedback was lost)', async () => {
    const { planMode, agent, session, exit, reload } = await checkpointed()
    expect(await exit(answer('Keep planning', { custom: 'Keep a backup for a week.' }), PLAN)).toBe('The user chose to keep planning; their feedback: Keep a backup for a week.')
    session.append('turn/end', {}) // a checkpoint is due here: the episode holds v1 and its feedback
    session.append('turn/start', {})
    expect(await exit(answer('Approve in a fresh context'), V2)).toEqual({ approved: true })
    const whole = dueHandoff(session.events, planMode.approvedPlan(agent))
    expect(whole).toMatchObject({ version: 2, decisions: [{ version: 1, feedback: 'Keep a backup for a week.' }] })
    const { later, restarted } = await reload()
    expect(dueHandoff(restarted.session.events, later.approvedPlan(restarted), episodeBefore(restarted.session))).toEqual(whole)
  })
})

describe('R101: where a decision is shown', () => {
  it('R101: the timeline line and plan-mode inspect read a fresh approval as approved (fresh context), and a leave as left', async () => {
    const { describePlanLogEvent } = await import('../src/index.js')
    const { formatReport, inspectEvents } = await import('../apps/cli/inspect.js')
    const { styles } = await import('../apps/cli/io.js')
    const log = createMemorySessionLog([
      { type: 'plan/mode', data: { active: true } },
      { type: 'plan/review', data: { outcome: 'left', title: TITLE, plan: PLAN } },
      { type: 'plan/mode', data: { active: false } },
      { type: 'plan/mode', data: { active: true } },
      { type: 'plan/review', data: { outcome: 'approved', title: TITLE, plan: PLAN, fresh: true } },
    ])
    expect(describePlanLogEvent(log.events[4]!)).toEqual({ tone: 'review', label: 'plan/review approved (fresh context)', detail: `approved (fresh context) "${TITLE}"` })
    expect(describePlanLogEvent(log.events[1]!)).toEqual({ tone: 'review', label: 'plan/review left', detail: `left "${TITLE}"` })
    const text = formatReport(inspectEvents('session.jsonl', log.events), styles(false))
    expect(text.slice(text.indexOf('Plan reviews:'))).toBe(`Plan reviews:\n  v1 #2 "${TITLE}": left\n  v1 #5 "${TITLE}": approved (fresh context)\n`)
  })
})
