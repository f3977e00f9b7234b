import { generateText, jsonSchema, stepCountIs, tool, type LanguageModel } from 'ai'
import { createMemorySessionLog, createPlanMode, type PlanAgent } from 'xstate-plan-mode'
import { withPlanMode } from 'xstate-plan-mode/ai-sdk'
import { createPlanGuard, readOnlyTool } from 'xstate-plan-mode/guard'

const path = jsonSchema<{ path: string }>({ type: 'object', properties: { path: { type: 'string' } }, required: ['path'] })
const tools = {
  readFile: readOnlyTool(tool({ description: 'Read a file.', inputSchema: path, execute: async ({ path }) => `(contents of ${path})` })),
  writeFile: tool({ description: 'Write a file.', inputSchema: path, execute: async ({ path }) => `wrote ${path}` }), // unclassified: side-effecting
}

/** An AI SDK agent whose writes are blocked while it plans, and whose planning steps run on `planner`. */
export function createGuardedAgent(model: LanguageModel, planner: LanguageModel) {
  const planMode = createPlanMode({ section: 'Plan mode: explore read-only, then present the whole plan with exit_plan_mode.' })
  const agent: PlanAgent = { id: 'main', session: createMemorySessionLog() }
  const guard = createPlanGuard({ planMode, action: 'block' }) // or 'observe': run it, but record it
  const plan = withPlanMode({ planMode, agent, tools, guard, planning: { model: planner } })
  const runTurn = (prompt: string) =>
    plan.runTurn(() => generateText({ model, prompt, tools: plan.tools, prepareStep: plan.prepareStep, stopWhen: stepCountIs(10) }))
  return { planMode, agent, runTurn }
}
