import { generateText, jsonSchema, stepCountIs, tool, type LanguageModel, type ModelMessage } from 'ai'
import { createMemorySessionLog, createPlanMode, type PlanAgent, type ReviewChannel } from 'xstate-plan-mode'
import { withPlanMode } from 'xstate-plan-mode/ai-sdk'

const readFile = tool({
  description: 'Read a file of the repository.',
  inputSchema: jsonSchema<{ path: string }>({ type: 'object', properties: { path: { type: 'string' } }, required: ['path'] }),
  execute: async ({ path }) => `(contents of ${path})`,
})

/** An AI SDK agent with plan mode: `/plan` switches it, `exit_plan_mode` asks the user to approve. */
export function createAiSdkAgent(model: LanguageModel, review: ReviewChannel) {
  const planMode = createPlanMode({ section: 'Plan mode: explore read-only, then present the whole plan with exit_plan_mode.', review })
  const agent: PlanAgent = { id: 'main', session: createMemorySessionLog(), steer: (message) => plan.steer(message) }
  const plan = withPlanMode({ planMode, agent, system: 'You are a coding agent.', tools: { readFile } })
  const history: ModelMessage[] = []

  async function runTurn(userText?: string) {
    history.push(...plan.takeSteered()) // a `/plan <message>` sent while idle opens this turn
    if (userText) history.push({ role: 'user', content: userText })
    const result = await plan.runTurn(() => // logs turn/start and turn/end
      generateText({ model, messages: [...history], tools: plan.tools, prepareStep: plan.prepareStep, stopWhen: stepCountIs(20) }),
    )
    history.push(...plan.transcript(result.response.messages)) // notices and /plan messages where the model saw them
    return result.text
  }
  return { planMode, agent, history, runTurn }
}
