import { stepCountIs, streamText, type LanguageModel, type ModelMessage } from 'ai'
import { createPlanMode, type PlanAgent, type SessionLog } from 'xstate-plan-mode'
import { withPlanMode } from 'xstate-plan-mode/ai-sdk'

const SECTION = 'Plan mode: explore read-only, then present the whole plan with exit_plan_mode.'

/**
 * One chat request of a `useChat` app on serverless functions: every request may be a new process.
 * An `exit_plan_mode` call ends the response with a `tool-approval-request`; the user's
 * `addToolApprovalResponse({ id, approved, reason })` comes back in a later request, whose
 * messages carry it: approved carries the plan out, denied keeps planning with the reason.
 */
export async function chatRequest(model: LanguageModel, session: SessionLog, messages: ModelMessage[], approvalSecret: string) {
  const planMode = createPlanMode({ section: SECTION, review: 'durable' }) // reviews live in the log
  const agent: PlanAgent = { id: 'main', session }
  const plan = withPlanMode({ planMode, agent, system: 'You are a coding agent.' })
  try {
    return await plan.runTurn(async () => {
      const result = streamText({
        model,
        messages,
        tools: plan.tools,
        prepareStep: plan.prepareStep,
        stopWhen: stepCountIs(20),
        experimental_toolApprovalSecret: approvalSecret, // a forged approval approves nothing
      })
      await result.consumeStream() // a route returns result.toUIMessageStreamResponse() instead
      return plan.transcript((await result.response).messages) // what the client adds to its messages
    })
  } finally {
    await planMode.dispose() // the open review stays open in the log
  }
}
