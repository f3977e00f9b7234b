import { InvalidToolApprovalSignatureError, generateText, stepCountIs, streamText, wrapLanguageModel, type LanguageModel, type ModelMessage } from 'ai'
import { afterEach, describe, expect, it } from 'vitest'
import { withPlanMode } from '../src/adapters/ai-sdk.js'
import { createMemorySessionLog, createPlanMode, type PlanAgent, type PlanMode, type SessionLog } from '../src/index.js'
import { scriptedModel, type SeenRequest } from './fixtures/ai-sdk-model.js'

// Every text below is copied from docs/spec.md (R42, R45, R50, R82).
const SYSTEM = 'You are a careful coding agent.'
const SECTION = 'Plan mode is on: explore read-only, then present the plan with exit_plan_mode.'
const RESULT_TEXT = 'Plan approved — plan mode exited; carry out the plan starting with your next step.'
const REVISE = 'The user chose to keep planning; revise the plan and present it again.'
const REASON = 'Backfill in batches of 1000.'
const KEEP_WITH_REASON = `The user chose to keep planning; their feedback: ${REASON}`
const NOT_IN_PLAN_MODE = 'exit_plan_mode is only available in plan mode'
const ENTERING = 'The user switched this session to plan mode.'
const LEAVING = 'The user switched this session back to the default mode.'
const noMatch = (toolCallId: string) => `the approval of tool call "${toolCallId}" matches no open plan review; nothing was approved`
const PLAN = '# Migrate the users table\n\n1. Add the column.\n2. Backfill it.'
const TITLE = 'Migrate the users table'
const SECRET = 'a secret only the server knows'
const ASKED: ModelMessage = { role: 'user', content: [{ type: 'text', text: 'Plan the migration.' }] }

/** Every service a request made, disposed after each test (a request disposes its own, too). */
const services: PlanMode[] = []
afterEach(async () => {
  await Promise.all(services.splice(0).map((service) => service.dispose()))
})

/** What one chat request left: the response messages, the SDK's failure if any, the service it used. */
interface Answered {
  response: ModelMessage[]
  failure: unknown
  planMode: PlanMode
  agent: PlanAgent
}

/**
 * One chat request of a stateless app: a fresh durable service and a fresh `withPlanMode` over the
 * same session log, one `streamText` call, then the service is disposed (the process ends).
 */
async function chatRequest(
  log: SessionLog,
  model: LanguageModel,
  messages: ModelMessage[],
  secret?: string,
  decisions?: 'all',
  loop: 'streamText' | 'generateText' = 'streamText',
): Promise<Answered> {
  const warnings: unknown[][] = []
  const planMode = createPlanMode(
    { section: SECTION, review: 'durable', logger: { warn: (...args: unknown[]) => warnings.push(args) }, ...(decisions === undefined ? {} : { decisions }) },
  )
  services.push(planMode)
  const agent: PlanAgent = { id: 'agent-1', session: log }
  const plan = withPlanMode({ planMode, agent, system: SYSTEM })
  let failure: unknown
  const response = await plan.runTurn(async () => {
    if (loop === 'generateText') {
      const settings = { model, messages, tools: plan.tools, prepareStep: plan.prepareStep, stopWhen: stepCountIs(5) }
      const result = await generateText(secret === undefined ? settings : { ...settings, experimental_toolApprovalSecret: secret }).catch((error: unknown) => void (failure = error))
      return result === undefined ? [] : plan.transcript(result.response.messages)
    }
    const result = streamText({
      model,
      messages,
      tools: plan.tools,
      prepareStep: plan.prepareStep,
      stopWhen: stepCountIs(5),
      onError: ({ error }) => void (failure ??= error),
      ...(secret === undefined ? {} : { experimental_toolApprovalSecret: secret }),
    })
    await result.consumeStream()
    if (failure !== undefined) return []
    return plan.transcript((await result.response).messages)
  })
  expect(warnings).toEqual([])
  await planMode.dispose()
  return { response, failure, planMode, agent }
}

/** The approval requests a response holds. */
function approvalRequests(response: ModelMessage[]) {
  return response.flatMap((message) =>
    message.role === 'assistant' && typeof message.content !== 'string' ? message.content.filter((part) => part.type === 'tool-approval-request') : [],
  ) as { type: 'tool-approval-request'; approvalId: string; toolCallId: string; signature?: string }[]
}

/** Request 1: in plan mode, the model presents PLAN; the response ends with the approval request. */
async function presentPlan(log: SessionLog, secret?: string, decisions?: 'all') {
  const { model, requests } = scriptedModel([{ toolCalls: [{ name: 'exit_plan_mode', input: { plan: PLAN } }] }, { text: 'Waiting.' }])
  const { response, failure } = await chatRequest(log, model, [ASKED], secret, decisions)
  expect(failure).toBeUndefined()
  const [request] = approvalRequests(response)
  if (request === undefined) throw new Error('no tool-approval-request in the response')
  return { history: [ASKED, ...response], request, requests, response }
}

const inPlanMode = () => createMemorySessionLog([{ type: 'plan/mode', data: { active: true } }])
const reviews = (log: SessionLog) => log.events.filter((e) => e.type === 'plan/review').map((e) => e.data)
const lines = (log: SessionLog, from = 0) => log.events.slice(from).map((e) => `${e.type} ${JSON.stringify(e.data)}`)
const approval = (approvalId: string, approved: boolean, reason?: string): ModelMessage => ({
  role: 'tool',
  content: [{ type: 'tool-approval-response', approvalId, approved, ...(reason === undefined ? {} : { reason }) }],
})
const notices = (request: SeenRequest) => request.userTexts.filter((text) => text === ENTERING || text === LEAVING)
/** The durable service as a later process sees the log. */
function openReviewOf(log: SessionLog) {
  const planMode = createPlanMode({ section: SECTION, review: 'durable', logger: { warn() {} } })
  services.push(planMode)
  return planMode.openReview({ id: 'agent-1', session: log })
}

describe('R82: durable reviews through AI SDK 6 tool approval, across requests with fresh services', () => {
  it('R82, R79: an exit call opens the review with the call’s id and ends the response with a tool-approval-request', async () => {
    const log = inPlanMode()
    const { request, requests, response } = await presentPlan(log)
    expect(requests()).toHaveLength(1) // the loop stopped for the approval
    expect(request).toMatchObject({ type: 'tool-approval-request', approvalId: expect.any(String), toolCallId: expect.any(String) })
    const assistant = response.find((m) => m.role === 'assistant')!
    expect((assistant.content as { type: string }[]).map((part) => part.type)).toEqual(['tool-call', 'tool-approval-request'])
    expect(reviews(log)).toEqual([
      { outcome: 'requested', reviewId: expect.any(String), title: TITLE, plan: PLAN, callId: request.toolCallId },
    ])
    expect(openReviewOf(log)).toEqual({
      reviewId: (reviews(log)[0] as { reviewId: string }).reviewId,
      title: TITLE,
      plan: PLAN,
      version: 1,
      seq: 4,
      callId: request.toolCallId,
    })
    expect(log.events.map((e) => e.type)).toEqual(['plan/mode', 'turn/start', 'request/header', 'plan/review', 'turn/end'])
  })

  it('R82, R50, R81: an approval in the next request answers Approve in execute, told in the result; the model reads the result text and no notice', async () => {
    const log = inPlanMode()
    const { history, request } = await presentPlan(log)
    const from = log.events.length
    const { model, requests } = scriptedModel([{ text: 'Adding the column.' }])
    const { response, failure } = await chatRequest(log, model, [...history, approval(request.approvalId, true)])
    expect(failure).toBeUndefined()

    const [step] = requests()
    expect(requests()).toHaveLength(1)
    expect(step!.system).toBe(SYSTEM)
    expect(step!.toolResults).toEqual([{ toolName: 'exit_plan_mode', output: { type: 'text', value: RESULT_TEXT } }])
    expect(step!.userTexts).toEqual(['Plan the migration.'])
    expect(notices(step!)).toEqual([])
    const { reviewId } = reviews(log)[0] as { reviewId: string }
    expect(lines(log, from)).toEqual([
      'turn/start {}',
      `plan/review ${JSON.stringify({ outcome: 'approved', reviewId, title: TITLE, plan: PLAN, toldInResult: true })}`,
      'plan/mode {"active":false}',
      'request/header {"step":0}',
      'turn/end {}',
    ])
    // The transcript the client keeps holds the same result.
    expect(response.flatMap((m) => (m.role === 'tool' ? m.content : []))).toContainEqual(
      expect.objectContaining({ type: 'tool-result', toolCallId: request.toolCallId, output: { type: 'text', value: RESULT_TEXT } }),
    )
    expect(openReviewOf(log)).toBeNull()
  })

  it('R82, R45: a denial with a reason is answered Keep planning with the reason as feedback; the model reads R45’s text', async () => {
    const log = inPlanMode()
    const { history, request } = await presentPlan(log)
    const from = log.events.length
    const { model, requests } = scriptedModel([{ text: 'Revising the plan.' }])
    const { failure } = await chatRequest(log, model, [...history, approval(request.approvalId, false, REASON)])
    expect(failure).toBeUndefined()
    const [step] = requests()
    expect(step!.system).toBe(`${SYSTEM}\n\n${SECTION}`)
    expect(step!.toolResults).toEqual([{ toolName: 'exit_plan_mode', output: { type: 'error-text', value: KEEP_WITH_REASON } }])
    expect(notices(step!)).toEqual([])
    expect(step!.userTexts).toEqual(['Plan the migration.'])
    const { reviewId } = reviews(log)[0] as { reviewId: string }
    expect(lines(log, from)).toEqual([
      'turn/start {}',
      `plan/review ${JSON.stringify({ outcome: 'keep-planning', reviewId, title: TITLE, plan: PLAN, feedback: REASON, toldInResult: true })}`,
      'request/header {"step":0}',
      'turn/end {}',
    ])
    expect(openReviewOf(log)).toBeNull()
  })

  it('R82, R45: a denial without a reason (or a blank one) keeps planning with the revise text and no feedback', async () => {
    for (const reason of [undefined, '  ']) {
      const log = inPlanMode()
      const { history, request } = await presentPlan(log)
      const { model, requests } = scriptedModel([{ text: 'Revising the plan.' }])
      await chatRequest(log, model, [...history, approval(request.approvalId, false, reason)])
      expect(requests()[0]!.toolResults).toEqual([{ toolName: 'exit_plan_mode', output: { type: 'error-text', value: REVISE } }])
      const { reviewId } = reviews(log)[0] as { reviewId: string }
      expect(reviews(log).at(-1)).toStrictEqual({ outcome: 'keep-planning', reviewId, title: TITLE, plan: PLAN, toldInResult: true })
    }
  })

  it('R82, R42: a call the core refuses needs no approval; its execute fails with the refusal and the model reads it', async () => {
    const log = createMemorySessionLog() // not in plan mode
    const { model, requests } = scriptedModel([{ toolCalls: [{ name: 'exit_plan_mode', input: { plan: PLAN } }] }, { text: 'Working.' }])
    const { response, failure } = await chatRequest(log, model, [ASKED])
    expect(failure).toBeUndefined()
    expect(approvalRequests(response)).toEqual([])
    expect(requests()).toHaveLength(2)
    expect(requests()[1]!.toolResults).toEqual([{ toolName: 'exit_plan_mode', output: { type: 'error-text', value: NOT_IN_PLAN_MODE } }])
    expect(reviews(log)).toEqual([])
    expect(log.events.map((e) => e.type)).toEqual(['turn/start', 'request/header', 'request/header', 'turn/end'])
  })

  it('R82: with experimental_toolApprovalSecret a signed approval approves; an unsigned or forged one is refused before anything runs and the review stays open', async () => {
    // A signed approval, given back as it came: approved.
    const signed = inPlanMode()
    const good = await presentPlan(signed, SECRET)
    expect(good.request.signature).toEqual(expect.any(String))
    const ok = scriptedModel([{ text: 'Adding the column.' }])
    expect((await chatRequest(signed, ok.model, [...good.history, approval(good.request.approvalId, true)], SECRET)).failure).toBeUndefined()
    expect(ok.requests()[0]!.toolResults).toEqual([{ toolName: 'exit_plan_mode', output: { type: 'text', value: RESULT_TEXT } }])

    const forgeries: [string, (history: ModelMessage[]) => ModelMessage[]][] = [
      // The approval request without its signature.
      ['unsigned', (history) => history.map((m) => (m.role === 'assistant' && typeof m.content !== 'string' ? { ...m, content: m.content.map((p) => (p.type === 'tool-approval-request' ? { ...p, signature: undefined } : p)) } : m)) as ModelMessage[]],
      // The call's input changed after it was signed.
      ['forged', (history) => history.map((m) => (m.role === 'assistant' && typeof m.content !== 'string' ? { ...m, content: m.content.map((p) => (p.type === 'tool-call' ? { ...p, input: { plan: '# Drop the users table' } } : p)) } : m)) as ModelMessage[]],
    ]
    for (const [what, forge] of forgeries) {
      const log = inPlanMode()
      const { history, request } = await presentPlan(log, SECRET)
      const open = openReviewOf(log)
      const before = lines(log)
      const { model, requests } = scriptedModel([{ text: 'Dropping the table.' }])
      const { failure } = await chatRequest(log, model, [...forge(history), approval(request.approvalId, true)], SECRET)
      expect(InvalidToolApprovalSignatureError.isInstance(failure), what).toBe(true)
      expect((failure as Error).message).toBe(
        `Tool approval signature verification failed for approval "${request.approvalId}" (tool call "${request.toolCallId}"): ${what === 'unsigned' ? 'missing signature' : 'invalid signature'}`,
      )
      expect(requests()).toEqual([])
      expect(lines(log).filter((line) => line.startsWith('plan/'))).toEqual(before.filter((line) => line.startsWith('plan/')))
      expect(openReviewOf(log)).toEqual(open)
    }
  })

  it('R82: an approval whose call is not the open review’s approves nothing and fails with the exact message', async () => {
    // The client's messages name another call (its id rewritten): the review of the real call stays open.
    const log = inPlanMode()
    const { history, request } = await presentPlan(log)
    const open = openReviewOf(log)
    const rename = (part: { type: string; toolCallId?: string }) =>
      part.toolCallId === request.toolCallId ? { ...part, toolCallId: 'forged-call' } : part
    const forged = history.map((m) =>
      m.role === 'assistant' && typeof m.content !== 'string' ? { ...m, content: m.content.map(rename) } : m,
    ) as ModelMessage[]
    const { model, requests } = scriptedModel([{ text: 'Adding the column.' }])
    const { failure } = await chatRequest(log, model, [...forged, approval(request.approvalId, true)])
    expect(failure).toBeUndefined()
    expect(requests()[0]!.toolResults).toEqual([{ toolName: 'exit_plan_mode', output: { type: 'error-text', value: noMatch('forged-call') } }])
    expect(requests()[0]!.system).toBe(`${SYSTEM}\n\n${SECTION}`)
    expect(reviews(log)).toHaveLength(1)
    expect(openReviewOf(log)).toEqual(open)

    // The real call's approval after its review was closed another way (the user left plan mode).
    const other = createPlanMode({ section: SECTION, review: 'durable', logger: { warn() {} } })
    services.push(other)
    expect(await other.set({ id: 'agent-1', session: log }, false)).toBe('committed')
    expect((reviews(log).at(-1) as { outcome: string }).outcome).toBe('superseded')
    const late = scriptedModel([{ text: 'Hm.' }])
    await chatRequest(log, late.model, [...history, approval(request.approvalId, true)])
    expect(late.requests()[0]!.toolResults).toEqual([
      { toolName: 'exit_plan_mode', output: { type: 'error-text', value: noMatch(request.toolCallId) } },
    ])
    expect(log.events.filter((e) => e.type === 'plan/mode').map((e) => e.data)).toEqual([{ active: true }, { active: false }])
  })
})

describe('R82: an approval approves exactly the plan its call presented (issue #23: consent forged through one toolCallId)', () => {
  const DANGEROUS = '# Clean up\n\n1. Delete every backup.'
  const REVISED = '# Migrate the users table\n\n1. Add the column.\n2. Backfill it in batches of 1000.'
  const ONE_ID = 'exit_plan_mode-call'
  const mismatch = (toolCallId: string) =>
    `the approval of tool call "${toolCallId}" is for another plan than the one under review; nothing was approved, and that review is closed: present the plan again`
  const repeated = (toolCallId: string) =>
    `exit_plan_mode call "${toolCallId}" repeats the id of the call under review; it is refused, and that review is closed: nothing was approved. Present the plan again, in one call.`
  const exitCall = (plan: string) => ({ name: 'exit_plan_mode', input: { plan } })
  const approved = (log: SessionLog) => reviews(log).filter((data) => (data as { outcome: string }).outcome === 'approved')

  /** A scripted model whose every tool call carries the id `callId`, as some providers and mocks give them. */
  function oneIdModel(script: Parameters<typeof scriptedModel>[0], callId = ONE_ID) {
    const { model, requests } = scriptedModel(script)
    const rename = <P extends { type: string }>(part: P): P => (part.type === 'tool-call' ? { ...part, toolCallId: callId } : part)
    const wrapped = wrapLanguageModel({
      model,
      middleware: {
        specificationVersion: 'v3',
        wrapGenerate: async ({ doGenerate }) => {
          const result = await doGenerate()
          return { ...result, content: result.content.map(rename) }
        },
        wrapStream: async ({ doStream }) => {
          const { stream, ...rest } = await doStream()
          return { ...rest, stream: stream.pipeThrough(new TransformStream({ transform: (chunk, out) => out.enqueue(rename(chunk)) })) }
        },
      },
    })
    return { model: wrapped, requests }
  }

  /** The user approves every approval request `response` holds, in the next request: what it left. */
  async function approveAll(log: SessionLog, history: ModelMessage[], response: ModelMessage[], loop?: 'generateText') {
    const { model, requests } = scriptedModel([{ text: 'Carrying it out.' }])
    const answers: ModelMessage = { role: 'tool', content: approvalRequests(response).map((r) => ({ type: 'tool-approval-response', approvalId: r.approvalId, approved: true })) }
    const answered = await chatRequest(log, model, [...history, ...response, answers], undefined, undefined, loop)
    return { ...answered, requests }
  }

  it('R82: an approval whose call carries another plan than the one under review approves nothing: the call fails with the mismatch text and the review is closed as keep planning', async () => {
    const log = inPlanMode()
    const { history, request } = await presentPlan(log)
    // The card the user approved showed another plan than the review holds (no secret signs the call).
    const other = history.map((m) =>
      m.role === 'assistant' && typeof m.content !== 'string'
        ? { ...m, content: m.content.map((p) => (p.type === 'tool-call' ? { ...p, input: { plan: DANGEROUS } } : p)) }
        : m,
    ) as ModelMessage[]
    const { model, requests } = scriptedModel([{ text: 'Hm.' }])
    const { failure } = await chatRequest(log, model, [...other, approval(request.approvalId, true)])
    expect(failure).toBeUndefined()
    expect(requests()[0]!.toolResults).toEqual([{ toolName: 'exit_plan_mode', output: { type: 'error-text', value: mismatch(request.toolCallId) } }])
    expect(requests()[0]!.system).toBe(`${SYSTEM}\n\n${SECTION}`)
    const { reviewId } = reviews(log)[0] as { reviewId: string }
    expect(reviews(log)).toEqual([
      { outcome: 'requested', reviewId, title: TITLE, plan: PLAN, callId: request.toolCallId },
      { outcome: 'keep-planning', reviewId, title: TITLE, plan: PLAN, toldInResult: true },
    ])
    expect(log.events.filter((e) => e.type === 'plan/mode').map((e) => e.data)).toEqual([{ active: true }])
    expect(openReviewOf(log)).toBeNull()
  })

  for (const loop of ['streamText', 'generateText'] as const) {
    it(`R82: a second exit_plan_mode call with the id of the call under review, in the same step, is refused and the review is closed as keep planning; approving the card approves nothing (${loop})`, async () => {
      const log = inPlanMode()
      // The first call's plan opens the review; the second, under the same id, is the one a card would show.
      const { model } = oneIdModel([{ toolCalls: [exitCall(DANGEROUS), exitCall(PLAN)] }, { text: 'Waiting.' }], 'exit-1')
      const first = await chatRequest(log, model, [ASKED], undefined, undefined, loop)
      expect(first.failure).toBeUndefined()
      const { failure } = await approveAll(log, [ASKED], first.response, loop === 'generateText' ? loop : undefined)
      expect(failure).toBeUndefined()
      expect(approved(log)).toEqual([])
      const reviewId = (reviews(log)[0] as { reviewId: string }).reviewId
      expect(reviews(log)).toEqual([
        { outcome: 'requested', reviewId, title: 'Clean up', plan: DANGEROUS, callId: 'exit-1' },
        { outcome: 'keep-planning', reviewId, title: 'Clean up', plan: DANGEROUS, toldInResult: true },
      ])
      expect(log.events.filter((e) => e.type === 'plan/mode').map((e) => e.data)).toEqual([{ active: true }])
    })
  }

  it('R82: the refused second call of a step tells the model why, in its result (streamText)', async () => {
    const log = inPlanMode()
    const { model, requests } = oneIdModel([{ toolCalls: [exitCall(DANGEROUS), exitCall(PLAN)] }, { text: 'Waiting.' }], 'exit-1')
    const { response } = await chatRequest(log, model, [ASKED])
    const results = response.flatMap((m) => (m.role === 'tool' ? m.content : []))
    expect(results).toContainEqual(expect.objectContaining({ type: 'tool-result', toolCallId: 'exit-1', output: { type: 'error-text', value: repeated('exit-1') } }))
    expect(requests()).toHaveLength(1) // the loop stopped for the first call's approval request
  })

  it('R82: a call in a later request that repeats the id of the call under review is refused and closes that review; approving its card approves nothing', async () => {
    const log = inPlanMode()
    const first = oneIdModel([{ toolCalls: [exitCall(PLAN)] }])
    await chatRequest(log, first.model, [ASKED])
    // The user writes instead of answering the card (a host that keeps only the texts); the model
    // presents a revision under the same id.
    const history: ModelMessage[] = [ASKED, { role: 'user', content: [{ type: 'text', text: 'Also drop the old index.' }] }]
    const second = oneIdModel([{ toolCalls: [exitCall(REVISED)] }, { text: 'I will present it again.' }])
    const revised = await chatRequest(log, second.model, history)
    expect(revised.failure).toBeUndefined()
    await approveAll(log, history, revised.response)
    expect(approved(log)).toEqual([])
    expect(second.requests()[1]!.toolResults.at(-1)).toEqual({ toolName: 'exit_plan_mode', output: { type: 'error-text', value: repeated(ONE_ID) } })
    const reviewId = (reviews(log)[0] as { reviewId: string }).reviewId
    expect(reviews(log)).toEqual([
      { outcome: 'requested', reviewId, title: TITLE, plan: PLAN, callId: ONE_ID },
      { outcome: 'keep-planning', reviewId, title: TITLE, plan: PLAN, toldInResult: true },
    ])
  })

  /** A model giving every call ONE_ID presents PLAN, the user keeps planning with REASON, and it presents REVISED under the same id. */
  async function revisedUnderOneId() {
    const log = inPlanMode()
    const first = oneIdModel([{ toolCalls: [exitCall(PLAN)] }])
    const presented = await chatRequest(log, first.model, [ASKED])
    const [card] = approvalRequests(presented.response)
    const history = [ASKED, ...presented.response, approval(card!.approvalId, false, REASON)]
    const second = oneIdModel([{ toolCalls: [exitCall(REVISED)] }, { text: 'Waiting.' }])
    const revised = await chatRequest(log, second.model, history)
    return { log, history, revised }
  }

  it('R82: with one id for every call, the denial of an earlier card answers nothing of the review open for a revised plan (regression: it closed that review as keep planning with the old reason as its feedback)', async () => {
    const { log, history, revised } = await revisedUnderOneId()
    expect(revised.failure).toBeUndefined()
    const before = reviews(log)
    expect(openReviewOf(log)).toMatchObject({ callId: ONE_ID, plan: REVISED })
    // The same request again (a client's retry): its denial is of the first card, whose plan is PLAN.
    const retried = await chatRequest(log, oneIdModel([{ text: 'Waiting.' }]).model, history)
    expect(retried.failure).toBeUndefined()
    expect(reviews(log)).toEqual(before)
    expect(openReviewOf(log)).toMatchObject({ callId: ONE_ID, plan: REVISED })
    // The user writes while the revised card waits: the history's denial is still the first card's.
    const [pending] = approvalRequests(revised.response)
    expect(pending).toBeDefined()
    const written = await chatRequest(log, oneIdModel([{ text: 'Noted.' }]).model, [...history, ...revised.response, ASKED], undefined, undefined, 'generateText')
    expect(written.failure).toBeDefined() // the SDK refuses a history whose revised call has no result
    expect(reviews(log)).toEqual(before)
    expect(openReviewOf(log)).toMatchObject({ callId: ONE_ID, plan: REVISED })
  })

  it('R82: a model that gives every call the same id gets a new review for its revised plan after Keep planning, and the approval approves the revised plan', async () => {
    const { log, history, revised } = await revisedUnderOneId()
    expect(revised.failure).toBeUndefined()
    const [firstId, secondId] = reviews(log).filter((d) => (d as { outcome: string }).outcome === 'requested').map((d) => (d as { reviewId: string }).reviewId)
    expect(reviews(log)).toEqual([
      { outcome: 'requested', reviewId: firstId, title: TITLE, plan: PLAN, callId: ONE_ID },
      { outcome: 'keep-planning', reviewId: firstId, title: TITLE, plan: PLAN, feedback: REASON, toldInResult: true },
      { outcome: 'requested', reviewId: secondId, title: TITLE, plan: REVISED, callId: ONE_ID },
    ])
    expect(approvalRequests(revised.response)).toEqual([expect.objectContaining({ toolCallId: ONE_ID })])
    const { failure, requests } = await approveAll(log, history, revised.response)
    expect(failure).toBeUndefined()
    expect(requests()[0]!.toolResults.at(-1)).toEqual({ toolName: 'exit_plan_mode', output: { type: 'text', value: RESULT_TEXT } })
    expect(approved(log)).toEqual([{ outcome: 'approved', reviewId: secondId, title: TITLE, plan: REVISED, toldInResult: true }])
  })
})

describe('R102, R81: a fresh approval answered through answerReview is told once through the AI SDK adapter', () => {
  const HANDOFF = [
    'The user approved this plan (v1) to be carried out in a fresh context: the conversation that produced it was set aside. Carry it out, starting now.',
    `The plan:\n\n${PLAN}`,
  ].join('\n\n')
  const APPROVED_NEWS = 'The user approved your plan and plan mode is off; carry out the plan, starting now.'

  /**
   * Request 1 presents the plan (a durable service offering every decision); another process
   * answers it `Approve in a fresh context` through `answerReview`; request 2 carries the card as
   * `settleClosedApprovals` settles it (the call's result `{ approved: true }`).
   */
  async function approvedFresh(toldInResult: boolean) {
    const log = inPlanMode()
    const { request } = await presentPlan(log, undefined, 'all')
    const answering = createPlanMode({ section: SECTION, review: 'durable', decisions: 'all', logger: { warn() {} } })
    services.push(answering)
    const agent: PlanAgent = { id: 'agent-1', session: log }
    const open = answering.openReview(agent)!
    const answer = { answers: [{ id: 'plan-review', selected: ['Approve in a fresh context'] }] }
    expect(await answering.answerReview(agent, open.reviewId, answer, toldInResult ? { toldInResult: true } : undefined)).toBe('approved')
    await answering.dispose()
    const history: ModelMessage[] = [
      ASKED,
      { role: 'assistant', content: [{ type: 'tool-call', toolCallId: request.toolCallId, toolName: 'exit_plan_mode', input: { plan: PLAN } }] },
      { role: 'tool', content: [{ type: 'tool-result', toolCallId: request.toolCallId, toolName: 'exit_plan_mode', output: { type: 'json', value: { approved: true } } }] },
    ]
    const { model, requests } = scriptedModel([{ text: 'Adding the column.' }])
    const { failure } = await chatRequest(log, model, history, undefined, 'all')
    expect(failure).toBeUndefined()
    return { log, requests }
  }

  it('R102, R81: without toldInResult the first request after the approval gets the handoff message alone, not also the approval news', async () => {
    const { requests } = await approvedFresh(false)
    const [step] = requests()
    expect(step!.userTexts).toEqual([HANDOFF])
    expect(step!.toolResults).toEqual([])
  })

  it('R102, R81: with toldInResult the first request after the approval gets the handoff message alone', async () => {
    const { requests } = await approvedFresh(true)
    expect(requests()[0]!.userTexts).toEqual([HANDOFF])
  })

  it('R102, R81: a host that does not hand off (no adapter) is told a fresh approval once, at the next boundary', async () => {
    const log = inPlanMode()
    const planMode = createPlanMode({ section: SECTION, review: 'durable', decisions: 'all', logger: { warn() {} } })
    services.push(planMode)
    const agent: PlanAgent = { id: 'agent-1', session: log }
    const { reviewId } = (await planMode.exitTool.execute({ plan: PLAN }, { agent })) as { reviewId: string }
    expect(await planMode.answerReview(agent, reviewId, { answers: [{ id: 'plan-review', selected: ['Approve in a fresh context'] }] })).toBe('approved')
    const texts = async () => (await planMode.stepBoundary(agent)).messages.map((m) => (m.content[0] as { text: string }).text)
    expect(await texts()).toEqual([APPROVED_NEWS])
    expect(await texts()).toEqual([])
  })
})

describe('R87: settleClosedApprovals gives a useChat host’s unanswered cards the result their closed review gives', () => {
  const card = (toolCallId: string) =>
    ({ type: 'tool-exit_plan_mode', toolCallId, state: 'approval-requested', input: { plan: PLAN }, approval: { id: `approval-${toolCallId}` } }) as const
  const assistant = (...parts: unknown[]) => ({ id: `m-${parts.length}`, role: 'assistant' as const, parts }) as never
  /** A durable service's agent in plan mode, and its AI SDK wiring. */
  const planning = async () => {
    const session = createMemorySessionLog()
    const planMode = createPlanMode({ section: SECTION, review: 'durable', logger: { warn: () => {} } })
    const agent: PlanAgent = { id: 'main', session }
    await planMode.set(agent, true)
    return { session, planMode, agent, plan: withPlanMode({ planMode, agent }) }
  }

  it('R87, R48: a card a /plan superseded becomes output-error with R48’s text; an open one and other parts stay; nothing to settle is the same array', async () => {
    const { session, planMode, agent, plan } = await planning()
    await planMode.exitTool.execute({ plan: PLAN }, { agent, callId: 'call-1' })
    const untouched = [{ id: 'u', role: 'user' as const, parts: [{ type: 'text' as const, text: 'hi' }] }] as never[]
    expect(plan.settleClosedApprovals(untouched)).toBe(untouched)
    const open = [assistant({ type: 'text', text: 'Here is my plan.' }, card('call-1'))]
    expect(plan.settleClosedApprovals(open)).toBe(open) // still open: the user answers it
    expect(await planMode.set(agent, false)).toBe('committed') // supersedes the review (R48)
    const settled = plan.settleClosedApprovals(open) as unknown as { parts: unknown[] }[]
    expect(settled[0]!.parts).toEqual([
      { type: 'text', text: 'Here is my plan.' },
      { type: 'tool-exit_plan_mode', toolCallId: 'call-1', state: 'output-error', input: { plan: PLAN }, errorText: 'The user changed the plan mode directly; the review is closed.' },
    ])
    await planMode.dispose()
  })

  it('R87: with one call id for every call, the card of the open review stays as it is although an earlier review of that id is closed', async () => {
    const { planMode, agent, plan } = await planning()
    const first = (await planMode.exitTool.execute({ plan: PLAN }, { agent, callId: 'call-1' })) as { reviewId: string }
    expect(await planMode.answerReview(agent, first.reviewId, { answers: [{ id: 'plan-review', selected: ['Keep planning'] }] })).toBe('keep-planning')
    await planMode.exitTool.execute({ plan: `${PLAN}\n3. Drop the old column.` }, { agent, callId: 'call-1' })
    const open = [assistant({ ...card('call-1'), input: { plan: `${PLAN}\n3. Drop the old column.` } })] // the open review's card shows its plan
    expect(plan.settleClosedApprovals(open)).toBe(open)
    await planMode.dispose()
  })

  /** One id for two calls: PLAN's review kept planning (with REASON), then the revised plan's review requested. */
  const reusedId = async () => {
    const { session, planMode, agent, plan } = await planning()
    const revisedPlan = `${PLAN}\n3. Drop the old column.`
    const first = (await planMode.exitTool.execute({ plan: PLAN }, { agent, callId: 'call-1' })) as { reviewId: string }
    session.append('plan/review', { outcome: 'keep-planning', reviewId: first.reviewId, title: TITLE, plan: PLAN, feedback: REASON })
    const second = (await planMode.exitTool.execute({ plan: revisedPlan }, { agent, callId: 'call-1' })) as { reviewId: string }
    const revisedCard = { ...card('call-1'), input: { plan: revisedPlan }, approval: { id: 'approval-call-1-revised' } }
    const cards = [assistant(card('call-1')), assistant(revisedCard)]
    const settle = () => (plan.settleClosedApprovals(cards) as unknown as { parts: unknown[] }[]).map((m) => m.parts[0])
    return { session, planMode, revisedPlan, revisedCard, second, settle }
  }

  it('R87: with one call id for every call, an earlier card kept planning is not shown approved when the review of the revised plan is approved (regression: the approval reached both cards, and the model read its first plan as approved)', async () => {
    const { session, planMode, revisedPlan, second, settle } = await reusedId()
    session.append('plan/review', { outcome: 'approved', reviewId: second.reviewId, title: TITLE, plan: revisedPlan })
    expect(settle()).toEqual([
      { type: 'tool-exit_plan_mode', toolCallId: 'call-1', state: 'output-error', input: { plan: PLAN }, errorText: KEEP_WITH_REASON },
      { type: 'tool-exit_plan_mode', toolCallId: 'call-1', state: 'output-available', input: { plan: revisedPlan }, output: { approved: true } },
    ])
    await planMode.dispose()
  })

  it('R87: with one call id for every call, the earlier card gets its own review\'s result while the revised plan\'s card stays open', async () => {
    const { planMode, revisedCard, settle } = await reusedId()
    expect(settle()).toEqual([
      { type: 'tool-exit_plan_mode', toolCallId: 'call-1', state: 'output-error', input: { plan: PLAN }, errorText: KEEP_WITH_REASON },
      revisedCard, // its review is open: the user answers it
    ])
    await planMode.dispose()
  })

  it('R87, R80, R45: a card answered by another writer gets that answer: an approval as output-available, keep planning as R45’s text with the feedback', async () => {
    const { session, planMode, agent, plan } = await planning()
    const first = (await planMode.exitTool.execute({ plan: PLAN }, { agent, callId: 'call-1' })) as { reviewId: string }
    session.append('plan/review', { outcome: 'keep-planning', reviewId: first.reviewId, title: TITLE, plan: PLAN, feedback: REASON })
    const second = (await planMode.exitTool.execute({ plan: PLAN }, { agent, callId: 'call-2' })) as { reviewId: string }
    session.append('plan/review', { outcome: 'approved', reviewId: second.reviewId, title: TITLE, plan: PLAN })
    const settled = plan.settleClosedApprovals([assistant(card('call-1')), assistant(card('call-2'))]) as unknown as { parts: unknown[] }[]
    expect(settled.map((m) => m.parts[0])).toEqual([
      { type: 'tool-exit_plan_mode', toolCallId: 'call-1', state: 'output-error', input: { plan: PLAN }, errorText: KEEP_WITH_REASON },
      { type: 'tool-exit_plan_mode', toolCallId: 'call-2', state: 'output-available', input: { plan: PLAN }, output: { approved: true } },
    ])
    await planMode.dispose()
  })
})

describe('a durable exit tool remembers refused calls within a bound (R82)', () => {
  it('R82, R42: refused calls whose execute never ran (aborted steps) are let go past 64, the latest kept: memory stays bounded', async () => {
    const session = createMemorySessionLog() // not in plan mode: the core refuses every exit call (R42)
    const planMode = createPlanMode({ section: SECTION, review: 'durable', logger: { warn: () => {} } })
    services.push(planMode)
    const agent: PlanAgent = { id: 'main', session }
    const exit = withPlanMode({ planMode, agent }).tools.exit_plan_mode as unknown as {
      needsApproval(input: unknown, options: { toolCallId: string; messages: ModelMessage[] }): Promise<boolean>
      execute(input: unknown, options: { toolCallId: string; messages: ModelMessage[] }): Promise<unknown>
    }
    const options = (toolCallId: string) => ({ toolCallId, messages: [ASKED] })
    // 65 refusals, none followed by its execute, as when each step is aborted in between.
    for (let i = 0; i <= 64; i++) expect(await exit.needsApproval({ plan: PLAN }, options(`call-${i}`))).toBe(false)
    await expect(exit.execute({ plan: PLAN }, options('call-64'))).rejects.toThrow(NOT_IN_PLAN_MODE)
    await expect(exit.execute({ plan: PLAN }, options('call-1'))).rejects.toThrow(NOT_IN_PLAN_MODE)
    // The oldest was let go: its execute finds no refusal and no open review.
    await expect(exit.execute({ plan: PLAN }, options('call-0'))).rejects.toThrow(noMatch('call-0'))
  })
})
