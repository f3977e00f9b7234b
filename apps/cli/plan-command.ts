/**
 * `/plan` as the CLI's hosts run it: the command is logged around its run (`command/run`, then
 * `command/done` with its result), as a host logs its commands, so that `plan-mode inspect` and
 * the projection (R58) can tell a selection on its way from the log alone.
 */
import { PLAN_LOG_EVENTS, type CommandResult, type PlanAgent, type PlanMode } from 'xstate-plan-mode'

/** Runs one `/plan` the user typed; `rawInput` is what follows `/plan` (`''`, `off`, a message). */
export type PlanCommandRunner = (rawInput: string) => Promise<CommandResult>

/**
 * A `/plan` runner for one agent. Command ids are random: unique across restarts and across
 * writers of a shared log, as runs and dones pair by them (R58, R86).
 * The result is the service's (R55–R57); the runner adds nothing to it.
 * @throws (rejects) when a log append fails.
 */
export function planCommandRunner(planMode: PlanMode, agent: PlanAgent): PlanCommandRunner {
  return async (rawInput) => {
    const commandId = crypto.randomUUID()
    await agent.session.append(PLAN_LOG_EVENTS.commandRun, { commandId, name: 'plan', args: rawInput })
    const result = await planMode.command.run({ agent, rawInput })
    await agent.session.append(PLAN_LOG_EVENTS.commandDone, { commandId, kind: result.kind, text: result.text })
    return result
  }
}
