import { readFileSync } from 'node:fs'
import { afterEach, describe, expect, it } from 'vitest'
import { formatReport, inspectEvents } from '../apps/cli/inspect.js'
import { styles } from '../apps/cli/io.js'
import { foldViolations } from '../src/guard/index.js'
import type { PlanMode } from '../src/index.js'
import { createGuardedAgent } from '../examples/guarded-agent.js'
import { scriptedModel } from './fixtures/ai-sdk-model.js'

const GUIDE = readFileSync(new URL('../docs/guard.md', import.meta.url), 'utf8')
const EXAMPLE = readFileSync(new URL('../examples/guarded-agent.ts', import.meta.url), 'utf8')
const BLOCKED = 'writeFile is not available in plan mode; present your plan with exit_plan_mode first.'

const services: PlanMode[] = []
afterEach(async () => {
  await Promise.all(services.splice(0).map((service) => service.dispose()))
})

describe('docs/guard.md: a guarded AI SDK agent', () => {
  it('docs/guard.md shows the example file verbatim', () => {
    expect(GUIDE).toContain(EXAMPLE.trim())
  })

  it('R89, R92, R93: the planner plans and its write is blocked; after /plan off the default model writes; inspect prints what docs/guard.md shows', async () => {
    const planner = scriptedModel([
      { toolCalls: [{ name: 'writeFile', input: { path: 'src/cache.ts' } }] },
      { toolCalls: [{ name: 'readFile', input: { path: 'src/importer.ts' } }] },
      { text: 'I will add a cache in front of the importer.' },
    ])
    const model = scriptedModel([{ toolCalls: [{ name: 'writeFile', input: { path: 'src/cache.ts' } }] }, { text: 'Done.' }])
    const { planMode, agent, runTurn } = createGuardedAgent(model.model, planner.model)
    services.push(planMode)

    await planMode.command.run({ agent, rawInput: '' })
    const planning = await runTurn('Add a cache to the importer.')
    expect(planning.text).toBe('I will add a cache in front of the importer.')
    expect(planner.requests()[1]!.toolResults).toEqual([{ toolName: 'writeFile', output: { type: 'error-text', value: BLOCKED } }])
    expect(model.requests()).toEqual([])

    await planMode.command.run({ agent, rawInput: 'off' })
    const building = await runTurn('Go ahead.')
    expect(building.text).toBe('Done.')
    expect(model.requests()[1]!.toolResults).toEqual([{ toolName: 'writeFile', output: { type: 'text', value: 'wrote src/cache.ts' } }])
    expect(planner.requests()).toHaveLength(3)

    expect(foldViolations(agent.session.events)).toMatchObject({ observed: 0, blocked: 1 })
    const printed = formatReport(inspectEvents('session.jsonl', agent.session.events), styles(false)).replace(/call-0-0-[0-9a-f]+/g, 'call-0-0-…')
    expect(GUIDE).toContain(printed)
  })
})
