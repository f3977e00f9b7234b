import { anthropic } from '@ai-sdk/anthropic'
import { openai } from '@ai-sdk/openai'
import { generateText, stepCountIs, type LanguageModel, type ModelMessage } from 'ai'
import { createMemorySessionLog, createPlanMode, type PlanAgent } from 'xstate-plan-mode'
import { withPlanMode } from 'xstate-plan-mode/ai-sdk'

/** An agent that plans on a stronger model, with extended thinking, and carries plans out on a cheaper one. */
export function createTwoModelAgent(planner: LanguageModel = anthropic('claude-opus-4-1'), builder: LanguageModel = openai('gpt-5-mini')) {
  const planMode = createPlanMode({ section: 'Plan mode: explore read-only, then present the whole plan with exit_plan_mode.' })
  const agent: PlanAgent = { id: 'main', session: createMemorySessionLog() }
  const plan = withPlanMode({
    planMode,
    agent,
    system: 'You are a coding agent.',
    planning: { model: planner, providerOptions: { anthropic: { thinking: { type: 'enabled', budgetTokens: 8000 } } } },
  })
  const runTurn = (messages: ModelMessage[]) =>
    plan.runTurn(() =>
      generateText({
        model: builder, // the steps taken while plan mode is off
        providerOptions: { openai: { reasoningEffort: 'low' } }, // every step; planning steps get the planning ones merged over them
        messages,
        tools: plan.tools,
        prepareStep: plan.prepareStep,
        stopWhen: stepCountIs(20),
      }),
    )
  return { planMode, agent, runTurn }
}
