import { generateText, stepCountIs, type LanguageModel } from 'ai'
import { createPlanMode, headlessReview, planHistory, type PlanAgent } from 'xstate-plan-mode'
import { withPlanMode } from 'xstate-plan-mode/ai-sdk'
import { openJsonlSessionLog } from 'xstate-plan-mode/node'

/**
 * A CI job: plan only, never carry a plan out unattended. The review policy 'stop' dismisses every
 * plan, so the run ends in plan mode, and the plan stays in the log (`plan-mode inspect <logPath>`).
 */
export async function planInCi(model: LanguageModel, task: string, logPath: string) {
  const review = headlessReview({ policy: 'stop' }) // nobody to ask: every plan is dismissed, recorded with by: 'policy'
  const planMode = createPlanMode({ section: 'Plan mode: explore read-only, then present the whole plan with exit_plan_mode.', review })
  const session = await openJsonlSessionLog(logPath)
  const agent: PlanAgent = { id: 'ci', session }
  const plan = withPlanMode({ planMode, agent, system: 'You are a coding agent.' })
  try {
    await planMode.command.run({ agent, rawInput: '' }) // `/plan`: plan mode on
    await plan.runTurn(() => generateText({ model, prompt: task, tools: plan.tools, prepareStep: plan.prepareStep, stopWhen: stepCountIs(10) }))
    return planHistory(session.events).at(-1) // { version, title, plan, outcome: 'dismissed', by: 'policy', … } for the job's report
  } finally {
    await planMode.dispose()
    await session.close()
  }
}
