import {
  AbstractChat,
  convertToModelMessages,
  lastAssistantMessageIsCompleteWithApprovalResponses,
  stepCountIs,
  streamText,
  type ChatTransport,
  type LanguageModel,
  type UIMessage,
  wrapLanguageModel,
} from 'ai'
import { describe, expect, it, vi } from 'vitest'
import { withPlanMode } from '../src/adapters/ai-sdk.js'
import { createMemorySessionLog, createPlanMode, type PlanAgent, type SessionLog } from '../src/index.js'
import { scriptedModel } from './fixtures/ai-sdk-model.js'
import { MemoryChatState } from './fixtures/memory-chat-state.js'

/**
 * R82 with the AI SDK's own chat client: `AbstractChat` (what `useChat` wraps) talks to a server
 * route through a transport, and every request is served by a fresh service, as on serverless
 * functions. The client approves or denies with its own `addToolApprovalResponse`, and
 * `sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses` sends the next
 * request: no glue between the chat and plan mode.
 */
const SYSTEM = 'You are a coding agent.'
const SECTION = 'Plan mode: explore read-only, then present the whole plan with exit_plan_mode.'
const PLAN = '# Migrate the users table\n\n1. Add the column.\n2. Backfill it.'
const SECRET = 'a secret only the server knows'

class TestChat extends AbstractChat<UIMessage> {
  constructor(transport: ChatTransport<UIMessage>) {
    super({ transport, state: new MemoryChatState(), sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses })
  }
  get all(): UIMessage[] {
    return this.state.messages
  }
}

/** The route: each request a new service over the stored log, one turn, the UI message stream back. */
function route(log: SessionLog, model: () => LanguageModel): ChatTransport<UIMessage> {
  return {
    async sendMessages({ messages }) {
      const planMode = createPlanMode({ section: SECTION, review: 'durable' })
      const agent: PlanAgent = { id: 'main', session: log }
      const plan = withPlanMode({ planMode, agent, system: SYSTEM })
      await plan.startTurn()
      const result = streamText({
        model: model(),
        messages: await convertToModelMessages(messages),
        tools: plan.tools,
        prepareStep: plan.prepareStep,
        stopWhen: stepCountIs(5),
        experimental_toolApprovalSecret: SECRET,
        onFinish: () => plan.endTurn().then(() => planMode.dispose()),
      })
      // The refusals' texts reach the card (the SDK's default masks every error).
      return result.toUIMessageStream({ onError: (error) => (error instanceof Error ? error.message : String(error)) })
    },
    reconnectToStream: async () => null,
  }
}

/** Waits until the chat is idle again (the automatic follow-up request included); the cap is a safety net. */
async function settled(chat: TestChat): Promise<void> {
  await vi.waitFor(() => expect(chat.status).toBe('ready'), { timeout: 30_000, interval: 5 })
}

/** The approval request of the chat's exit_plan_mode call, as the UI renders it. */
function approvalOf(chat: TestChat): { id: string; toolCallId: string } {
  const part = chat.all.flatMap((m) => m.parts).find((p) => p.type === 'tool-exit_plan_mode') as
    | { state: string; toolCallId: string; approval?: { id: string } }
    | undefined
  expect(part?.state).toBe('approval-requested')
  return { id: part!.approval!.id, toolCallId: part!.toolCallId }
}

describe('R82: a useChat client (AbstractChat) on a serverless route, a fresh service per request', () => {
  it('R82, R50: the client approves with addToolApprovalResponse; the next request carries the plan out', async () => {
    const log = createMemorySessionLog([{ type: 'plan/mode', data: { active: true } }])
    const first = scriptedModel([{ toolCalls: [{ name: 'exit_plan_mode', input: { plan: PLAN } }] }])
    const second = scriptedModel([{ text: 'Migrating now.' }])
    const models = [first.model, second.model]
    const chat = new TestChat(route(log, () => models.shift()!))

    await chat.sendMessage({ text: 'Plan the migration.' })
    await settled(chat)
    const approval = approvalOf(chat)
    expect(log.events.filter((e) => e.type === 'plan/review').map((e) => e.data)).toEqual([
      expect.objectContaining({ outcome: 'requested', callId: approval.toolCallId, plan: PLAN }),
    ])

    await chat.addToolApprovalResponse({ id: approval.id, approved: true })
    await settled(chat)
    const [step] = second.requests()
    expect(step!.system).toBe(SYSTEM)
    expect(step!.toolResults).toEqual([
      { toolName: 'exit_plan_mode', output: { type: 'text', value: 'Plan approved — plan mode exited; carry out the plan starting with your next step.' } },
    ])
    expect(log.events.filter((e) => e.type === 'plan/review').map((e) => (e.data as { outcome: string }).outcome)).toEqual(['requested', 'approved'])
    expect(log.events.filter((e) => e.type === 'plan/mode').map((e) => e.data)).toEqual([{ active: true }, { active: false }])
    const text = chat.all.at(-1)!.parts.filter((p) => p.type === 'text').map((p) => (p as { text: string }).text)
    expect(text.join('')).toBe('Migrating now.')
  })

  it('R82, R45: the client denies with a reason; the next request keeps planning with it as the feedback', async () => {
    const log = createMemorySessionLog([{ type: 'plan/mode', data: { active: true } }])
    const first = scriptedModel([{ toolCalls: [{ name: 'exit_plan_mode', input: { plan: PLAN } }] }])
    const second = scriptedModel([{ text: 'Revising.' }])
    const models = [first.model, second.model]
    const chat = new TestChat(route(log, () => models.shift()!))

    await chat.sendMessage({ text: 'Plan the migration.' })
    await settled(chat)
    await chat.addToolApprovalResponse({ id: approvalOf(chat).id, approved: false, reason: 'Backfill in batches.' })
    await settled(chat)
    const [step] = second.requests()
    expect(step!.system).toBe(`${SYSTEM}\n\n${SECTION}`)
    expect(step!.toolResults).toEqual([
      { toolName: 'exit_plan_mode', output: { type: 'error-text', value: 'The user chose to keep planning; their feedback: Backfill in batches.' } },
    ])
    expect(log.events.filter((e) => e.type === 'plan/review').at(-1)!.data).toMatchObject({
      outcome: 'keep-planning',
      feedback: 'Backfill in batches.',
      toldInResult: true,
    })
  })
})

describe('R82: a useChat card approves exactly the plan it shows (issue #23: consent forged through one toolCallId)', () => {
  const DANGEROUS = '# Clean up\n\n1. Delete every backup.'
  const REVISED = '# Migrate the users table\n\n1. Add the column.\n2. Backfill it in batches of 1000.'
  const exitCall = (plan: string) => ({ name: 'exit_plan_mode', input: { plan } })

  /** A scripted model whose every tool call carries the id `callId`, as some providers and mocks give them. */
  function oneIdModel(script: Parameters<typeof scriptedModel>[0], callId: string) {
    const { model, requests } = scriptedModel(script)
    const wrapped = wrapLanguageModel({
      model,
      middleware: {
        specificationVersion: 'v3',
        wrapStream: async ({ doStream }) => {
          const { stream, ...rest } = await doStream()
          const renamed = new TransformStream<typeof stream extends ReadableStream<infer C> ? C : never>({
            transform: (chunk, out) => out.enqueue(chunk.type === 'tool-call' ? { ...chunk, toolCallId: callId } : chunk),
          })
          return { ...rest, stream: stream.pipeThrough(renamed) }
        },
      },
    })
    return { model: wrapped, requests }
  }

  /** The exit_plan_mode cards of the chat as the UI renders them: state, the plan shown, the error text. */
  const cards = (chat: TestChat) =>
    chat.all
      .flatMap((m) => m.parts)
      .filter((p) => p.type === 'tool-exit_plan_mode')
      .map((p) => {
        const part = p as { state: string; input?: { plan?: string }; errorText?: string; approval?: { id: string } }
        return { state: part.state, plan: part.input?.plan, ...(part.errorText === undefined ? {} : { errorText: part.errorText }) }
      })
  const outcomes = (log: SessionLog) => log.events.filter((e) => e.type === 'plan/review').map((e) => e.data as { outcome: string; plan: string })

  /** The user approves every card that waits, as the UI offers it. */
  async function approveWaiting(chat: TestChat) {
    for (const part of chat.all.flatMap((m) => m.parts)) {
      const card = part as { type: string; state?: string; approval?: { id: string } }
      if (card.type === 'tool-exit_plan_mode' && card.state === 'approval-requested') await chat.addToolApprovalResponse({ id: card.approval!.id, approved: true })
    }
    await settled(chat)
  }

  it('R82: two exit_plan_mode calls with one id in one step: the card never approves the first call\'s plan it does not show; the second call is refused and the review closed', async () => {
    const log = createMemorySessionLog([{ type: 'plan/mode', data: { active: true } }])
    const first = oneIdModel([{ toolCalls: [exitCall(DANGEROUS), exitCall(PLAN)] }, { text: 'Waiting.' }], 'exit-1')
    const later = scriptedModel([{ text: 'Carrying it out.' }])
    const models = [first.model, later.model]
    const chat = new TestChat(route(log, () => models.shift()!))

    await chat.sendMessage({ text: 'Plan the migration.' })
    await settled(chat)
    const shown = cards(chat).map((card) => card.plan)
    await approveWaiting(chat)
    // Whatever the log approved, the user saw on the card they approved: here, nothing is approved.
    expect(outcomes(log).filter((r) => r.outcome === 'approved').map((r) => r.plan)).toEqual([])
    expect(shown).toEqual([PLAN])
    expect(outcomes(log).map((r) => [r.outcome, r.plan])).toEqual([
      ['requested', DANGEROUS],
      ['keep-planning', DANGEROUS],
    ])
    expect(cards(chat)).toEqual([
      {
        state: 'output-error',
        plan: PLAN,
        errorText: 'exit_plan_mode call "exit-1" repeats the id of the call under review; it is refused, and that review is closed: nothing was approved. Present the plan again, in one call.',
      },
    ])
  })

  it('R82: a model that gives every call the same id: after Keep planning its revised plan is under review, its card waits, and Approve approves the revised plan', async () => {
    const log = createMemorySessionLog([{ type: 'plan/mode', data: { active: true } }])
    const first = oneIdModel([{ toolCalls: [exitCall(PLAN)] }], 'exit_plan_mode-call')
    const second = oneIdModel([{ toolCalls: [exitCall(REVISED)] }], 'exit_plan_mode-call')
    const third = scriptedModel([{ text: 'Migrating now.' }])
    const models = [first.model, second.model, third.model]
    const chat = new TestChat(route(log, () => models.shift()!))

    await chat.sendMessage({ text: 'Plan the migration.' })
    await settled(chat)
    const card = chat.all.flatMap((m) => m.parts).find((p) => p.type === 'tool-exit_plan_mode') as { approval: { id: string } }
    await chat.addToolApprovalResponse({ id: card.approval.id, approved: false, reason: 'Backfill in batches.' })
    await settled(chat)
    expect(outcomes(log).map((r) => [r.outcome, r.plan])).toEqual([
      ['requested', PLAN],
      ['keep-planning', PLAN],
      ['requested', REVISED],
    ])
    expect(cards(chat).filter((c) => c.state === 'approval-requested')).toEqual([{ state: 'approval-requested', plan: REVISED }])

    await approveWaiting(chat)
    expect(outcomes(log).filter((r) => r.outcome === 'approved').map((r) => r.plan)).toEqual([REVISED])
    expect(third.requests()[0]!.toolResults.at(-1)).toEqual({
      toolName: 'exit_plan_mode',
      output: { type: 'text', value: 'Plan approved — plan mode exited; carry out the plan starting with your next step.' },
    })
  })
})
