import { readFileSync } from 'node:fs'
import { AbstractChat, DefaultChatTransport, lastAssistantMessageIsCompleteWithApprovalResponses, type UIMessage } from 'ai'
import { describe, expect, it, vi } from 'vitest'
import { createMemorySessionLog, type SessionLog } from '../src/index.js'
import { createChatRoutes } from '../examples/use-chat-route.js'
import { scriptedModel } from './fixtures/ai-sdk-model.js'
import { MemoryChatState } from './fixtures/memory-chat-state.js'

/**
 * The README's `useChat` route (examples/use-chat-route.ts), run exactly as printed: the AI SDK's
 * own chat client (`AbstractChat`, what `useChat` wraps) with its `DefaultChatTransport`, whose
 * fetch hands each request to the route's `chat` handler as a web `Request`. Every request opens
 * a fresh service over the chat's log, as on serverless functions. The client component
 * (examples/use-chat-client.tsx) is type-checked by `tsc` and shown verbatim.
 */
const README = readFileSync(new URL('../README.md', import.meta.url), 'utf8')
const ROUTE = readFileSync(new URL('../examples/use-chat-route.ts', import.meta.url), 'utf8')
const CLIENT = readFileSync(new URL('../examples/use-chat-client.tsx', import.meta.url), 'utf8')
const PLAN = '# Migrate the users table\n\n1. Add the column.\n2. Backfill it.'

/** The client as `PlanModeChat` configures `useChat`, on the route's handlers instead of the network. */
class TestChat extends AbstractChat<UIMessage> {
  constructor(id: string, routes: ReturnType<typeof createChatRoutes>) {
    const transport = new DefaultChatTransport<UIMessage>({
      api: 'http://127.0.0.1/api/chat',
      fetch: async (url, init) => routes.chat(new Request(url, init)),
    })
    super({ id, transport, state: new MemoryChatState(), sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses })
  }
  get all(): UIMessage[] {
    return this.state.messages
  }
}

/** Sends `/plan …` as `PlanModeChat` does: the text after `/plan` to the route's `command` handler. */
async function plan(routes: ReturnType<typeof createChatRoutes>, id: string, input: string) {
  const request = new Request('http://127.0.0.1/api/plan', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ id, input }) })
  return (await (await routes.command(request)).json()) as { kind: string; text: string; message: string }
}

/** Waits until the chat is idle again (the automatic follow-up request included); the cap is a safety net. */
async function settled(chat: TestChat): Promise<void> {
  await vi.waitFor(() => expect(chat.status).toBe('ready'), { timeout: 30_000, interval: 5 })
}

/** The chat's exit_plan_mode part, as the card renders it. */
function card(chat: TestChat) {
  return chat.all.flatMap((m) => m.parts).find((p) => p.type === 'tool-exit_plan_mode') as { state: string; input: { plan: string }; approval?: { id: string } } | undefined
}

function setup(script: Parameters<typeof scriptedModel>[0]) {
  const logs = new Map<string, SessionLog>()
  const model = scriptedModel(script)
  const routes = createChatRoutes({
    model: model.model,
    openSession: async (chatId) => logs.get(chatId) ?? logs.set(chatId, createMemorySessionLog()).get(chatId)!,
    approvalSecret: 'a secret only the server knows',
  })
  const types = (id: string) => logs.get(id)!.events.map((e) => e.type)
  return { logs, model, routes, types }
}

describe('README: the useChat route and client component', () => {
  it('the README shows the route and the client component verbatim', () => {
    expect(README).toContain(ROUTE.trim())
    expect(README).toContain(CLIENT.trim())
  })

  it('R56, R82, R50: /plan on the plan route, a plan presented as an approval card, approved with addToolApprovalResponse; the next request carries it out', async () => {
    const { model, routes, types, logs } = setup([
      { toolCalls: [{ name: 'exit_plan_mode', input: { plan: PLAN } }] },
      { text: 'Migrating now.' },
    ])
    expect(await plan(routes, 'chat-1', '')).toEqual({ kind: 'success', text: 'Plan mode on. Use /plan off to leave.', message: '' })
    const chat = new TestChat('chat-1', routes)
    await chat.sendMessage({ text: 'Plan the migration.' })
    await settled(chat)
    expect(card(chat)).toMatchObject({ state: 'approval-requested', input: { plan: PLAN } })
    expect(model.requests()[0]!.system).toBe('You are a coding agent.\n\nPlan mode: explore read-only, then present the whole plan with exit_plan_mode.')

    await chat.addToolApprovalResponse({ id: card(chat)!.approval!.id, approved: true })
    await settled(chat)
    expect(model.requests()[1]!.toolResults).toEqual([
      { toolName: 'exit_plan_mode', output: { type: 'text', value: 'Plan approved — plan mode exited; carry out the plan starting with your next step.' } },
    ])
    expect(model.requests()[1]!.system).toBe('You are a coding agent.')
    expect(chat.all.at(-1)!.parts.filter((p) => p.type === 'text').map((p) => (p as { text: string }).text).join('')).toBe('Migrating now.')
    expect(logs.get('chat-1')!.events.filter((e) => e.type === 'plan/mode').map((e) => e.data)).toEqual([{ active: true }, { active: false }])
    // Each request's turn ended with its stream, and the /plan was logged around its run.
    expect(types('chat-1').filter((t) => t.startsWith('turn/') || t.startsWith('command/'))).toEqual([
      'command/run', 'command/done', 'turn/start', 'turn/end', 'turn/start', 'turn/end',
    ])
  })

  it('R82, R45, R54, R56: /plan <message> (untrimmed) sends the trimmed message next; a denial with a reason keeps planning with the reason as the feedback', async () => {
    const { model, routes, logs } = setup([{ toolCalls: [{ name: 'exit_plan_mode', input: { plan: PLAN } }] }, { text: 'Revising.' }])
    const command = await plan(routes, 'chat-2', ' draft the migration')
    expect(command).toMatchObject({ kind: 'success', message: 'draft the migration' })
    const chat = new TestChat('chat-2', routes)
    await chat.sendMessage({ text: command.message })
    await settled(chat)
    await chat.addToolApprovalResponse({ id: card(chat)!.approval!.id, approved: false, reason: 'Backfill in batches.' })
    await settled(chat)
    expect(model.requests()[1]!.toolResults).toEqual([
      { toolName: 'exit_plan_mode', output: { type: 'error-text', value: 'The user chose to keep planning; their feedback: Backfill in batches.' } },
    ])
    expect(logs.get('chat-2')!.events.filter((e) => e.type === 'plan/review').map((e) => e.data)).toEqual([
      expect.objectContaining({ outcome: 'requested', plan: PLAN }),
      expect.objectContaining({ outcome: 'keep-planning', feedback: 'Backfill in batches.' }),
    ])
  })

  it('R87, R55: a /plan off while the card waits closes its review; the next message settles the card and the model is not refused', async () => {
    const { model, routes, logs } = setup([{ toolCalls: [{ name: 'exit_plan_mode', input: { plan: PLAN } }] }, { text: 'Answering directly.' }])
    await plan(routes, 'chat-3', '')
    const chat = new TestChat('chat-3', routes)
    await chat.sendMessage({ text: 'Plan the migration.' })
    await settled(chat)
    expect(await plan(routes, 'chat-3', 'off')).toEqual({ kind: 'success', text: 'Plan mode off.', message: '' })
    await chat.sendMessage({ text: 'Just answer: what is a backfill?' })
    await settled(chat)
    expect(chat.error).toBeUndefined()
    expect(model.requests()[1]!.system).toBe('You are a coding agent.')
    expect(chat.all.at(-1)!.parts.filter((p) => p.type === 'text').map((p) => (p as { text: string }).text).join('')).toBe('Answering directly.')
    expect(logs.get('chat-3')!.events.filter((e) => e.type === 'plan/mode').map((e) => e.data)).toEqual([{ active: true }, { active: false }])
  })
})
