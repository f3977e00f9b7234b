import { createMemorySessionLog, createPlanMode, type PlanAgent, type ReviewChannel } from 'xstate-plan-mode'
import type { Model } from './model.js'

/** A hand-written agent loop with plan mode: turns, one step boundary per step, the exit tool. */
export function createAgent(model: Model, review: ReviewChannel) {
  const planMode = createPlanMode({ section: 'Plan mode: explore and design, then present the whole plan with exit_plan_mode.', review })
  const history: string[] = []
  const agent: PlanAgent = { id: 'main', session: createMemorySessionLog(), steer: (m) => history.push(textOf(m.content)) }

  async function runTurn(userText?: string) {
    agent.session.append('turn/start', {})
    if (userText) history.push(userText)
    for (let step = 0; step < 8; step++) {
      const { section, messages } = await planMode.stepBoundary(agent) // right before deriving the request
      agent.session.append('request/header', {})
      history.push(...messages.map((notice) => textOf(notice.content))) // "The user switched this session to plan mode."
      const reply = await model({ system: section, messages: [...history], tools: [planMode.exitTool] })
      history.push(reply.text)
      if (!reply.toolCall) break
      const result = await planMode.exitTool.execute(reply.toolCall.args, { agent })
        .then(() => planMode.exitTool.resultText, (error: Error) => error.message) // feedback reaches the model
      history.push(result)
    }
    agent.session.append('turn/end', {})
  }
  return { planMode, agent, history, runTurn }
}

const textOf = (content: unknown[]) => content.map((part) => (part as { text?: string }).text ?? '').join('')
