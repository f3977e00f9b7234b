import { PLAN_LOG_EVENTS, type PlanAgent, type PlanMode } from 'xstate-plan-mode'

/** Runs `/plan …` for one agent and logs it, so that UIs and a restart can tell a selection on its way. */
export function createPlanCommand(planMode: PlanMode, agent: PlanAgent) {
  return async (rawInput: string) => { // the text after `/plan`: '', 'off', or a message
    const commandId = crypto.randomUUID() // unique across restarts: a run and its done pair up by it
    await agent.session.append(PLAN_LOG_EVENTS.commandRun, { commandId, name: 'plan', args: rawInput })
    const result = await planMode.command.run({ agent, rawInput }) // { kind: 'success' | 'error', text }: show the text
    await agent.session.append(PLAN_LOG_EVENTS.commandDone, { commandId, kind: result.kind, text: result.text })
    return result
  }
}
