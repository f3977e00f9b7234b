import { convertToModelMessages, stepCountIs, streamText, type LanguageModel, type UIMessage } from 'ai'
import { PLAN_LOG_EVENTS, createPlanMode, type SessionLog, type UserMessage } from 'xstate-plan-mode'
import { withPlanMode } from 'xstate-plan-mode/ai-sdk'

const SECTION = 'Plan mode: explore read-only, then present the whole plan with exit_plan_mode.'

/**
 * The two routes of a `useChat` app with plan mode. Any request may land on a fresh process: each
 * one opens a service over the chat's log (`openSession`, shared by every instance), where the plan
 * state and open reviews live. `approvalSecret` (`process.env.PLAN_MODE_APPROVAL_SECRET`) signs
 * each approval request, so a forged approval approves nothing.
 */
export function createChatRoutes(options: { model: LanguageModel; openSession: (chatId: string) => Promise<SessionLog>; approvalSecret: string }) {
  const open = async (chatId: string) => ({
    planMode: createPlanMode({ section: SECTION, review: 'durable' }),
    agent: { id: chatId, session: await options.openSession(chatId) },
  })

  /** POST /api/chat, `useChat`'s `{ id, messages }`: one turn, streamed back as UI messages. */
  async function chat(request: Request): Promise<Response> {
    const { id, messages }: { id: string; messages: UIMessage[] } = await request.json()
    const { planMode, agent } = await open(id)
    const plan = withPlanMode({ planMode, agent, system: 'You are a coding agent.' })
    const settled = plan.settleClosedApprovals(messages) // a card whose review closed meanwhile gets its result
    await plan.startTurn() // logs turn/start; the stream's end logs turn/end
    const result = streamText({
      model: options.model,
      messages: await convertToModelMessages(settled),
      tools: plan.tools, // your tools, plus exit_plan_mode, which asks for the user's approval
      prepareStep: plan.prepareStep, // the step boundary: each step's plan section and notices
      stopWhen: stepCountIs(20),
      experimental_toolApprovalSecret: options.approvalSecret,
    })
    return result.toUIMessageStreamResponse({
      originalMessages: settled, // an approval continues the message that asked for it
      onFinish: () => plan.endTurn().finally(() => planMode.dispose()), // an open review stays in the log
      onError: (error) => (error instanceof Error ? error.message : String(error)), // refusals reach the card
    })
  }

  /** POST /api/plan, `{ id, input }`: the text after `/plan` (`''`, `'off'` or a message), logged for every instance. */
  async function command(request: Request): Promise<Response> {
    const { id, input }: { id: string; input: string } = await request.json()
    const { planMode, agent } = await open(id)
    const steered: UserMessage[] = [] // `/plan <message>`: the message, for the client to send next
    try {
      const commandId = crypto.randomUUID()
      await agent.session.append(PLAN_LOG_EVENTS.commandRun, { commandId, name: 'plan', args: input })
      const result = await planMode.command.run({ agent: { ...agent, steer: (m) => steered.push(m) }, rawInput: input })
      await agent.session.append(PLAN_LOG_EVENTS.commandDone, { commandId, kind: result.kind, text: result.text })
      const message = steered.flatMap((m) => m.content.map((part) => (part as { text?: string }).text ?? '')).join('')
      return Response.json({ kind: result.kind, text: result.text, message })
    } finally {
      await planMode.dispose()
    }
  }

  return { chat, command }
}
