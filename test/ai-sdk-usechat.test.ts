import {
  AbstractChat,
  convertToModelMessages,
  lastAssistantMessageIsCompleteWithApprovalResponses,
  stepCountIs,
  streamText,
  type ChatState,
  type ChatStatus,
  type ChatTransport,
  type LanguageModel,
  type UIMessage,
} from 'ai'
import { describe, expect, it } from 'vitest'
import { withPlanMode } from '../src/adapters/ai-sdk.js'
import { createMemorySessionLog, createPlanMode, type PlanAgent, type SessionLog } from '../src/index.js'
import { scriptedModel } from './fixtures/ai-sdk-model.js'

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

/** A chat's state kept in plain memory: what a UI framework's store would hold. */
class MemoryChatState implements ChatState<UIMessage> {
  status: ChatStatus = 'ready'
  error: Error | undefined = undefined
  messages: UIMessage[] = []
  pushMessage = (message: UIMessage) => void this.messages.push(message)
  popMessage = () => void this.messages.pop()
  replaceMessage = (index: number, message: UIMessage) => void (this.messages[index] = message)
  snapshot = <T>(thing: T): T => structuredClone(thing)
}

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
      const planMode = createPlanMode({ section: SECTION }, { reviews: 'durable' })
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
      return result.toUIMessageStream()
    },
    reconnectToStream: async () => null,
  }
}

/** Waits until the chat is idle again (the automatic follow-up request included). */
async function settled(chat: TestChat): Promise<void> {
  for (let i = 0; i < 200 && chat.status !== 'ready'; i++) await new Promise((resolve) => setTimeout(resolve, 5))
  expect(chat.status).toBe('ready')
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
