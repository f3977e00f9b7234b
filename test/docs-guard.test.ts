import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { readFileSync } from 'node:fs'
import { afterEach, describe, expect, it } from 'vitest'
import { formatReport, inspectEvents } from '../apps/cli/inspect.js'
import { styles } from '../apps/cli/io.js'
import type { PlanMode, SessionEvent } from '../src/index.js'
import { planInCi } from '../examples/headless-ci.js'
import { createTwoModelAgent } from '../examples/planning-model.js'
import { scriptedModel } from './fixtures/ai-sdk-model.js'
import { respondingModel } from '../apps/shared/scripted-model.js'

const GUIDE = readFileSync(new URL('../docs/guard.md', import.meta.url), 'utf8')
const example = (name: string) => readFileSync(new URL(`../examples/${name}`, import.meta.url), 'utf8')
const THINKING = { anthropic: { thinking: { type: 'enabled', budgetTokens: 8000 } } }
const CALL_OPTIONS = { openai: { reasoningEffort: 'low' } }
const DISMISSED = 'The user dismissed the plan review to speak instead; stay in plan mode, stop here, and wait for their message.'

const services: PlanMode[] = []
const dirs: string[] = []
afterEach(async () => {
  await Promise.all(services.splice(0).map((service) => service.dispose()))
  await Promise.all(dirs.splice(0).map((dir) => rm(dir, { recursive: true, force: true })))
})

describe('docs/guard.md: a planning model (examples/planning-model.ts)', () => {
  it('docs/guard.md shows examples/planning-model.ts verbatim', () => {
    expect(GUIDE).toContain(example('planning-model.ts').trim())
  })

  it('R93: planning steps run on the planner with its provider options merged over the call\'s; after /plan off the call\'s model runs with the call\'s options alone', async () => {
    const planner = scriptedModel([{ text: 'Plan: add a cache in front of the importer.' }])
    const builder = scriptedModel([{ text: 'Added the cache.' }])
    const { planMode, agent, runTurn } = createTwoModelAgent(planner.model, builder.model)
    services.push(planMode)

    await planMode.command.run({ agent, rawInput: '' })
    expect((await runTurn([{ role: 'user', content: 'Add a cache to the importer.' }])).text).toBe('Plan: add a cache in front of the importer.')
    expect(planner.requests().map((request) => request.raw.providerOptions)).toEqual([{ ...CALL_OPTIONS, ...THINKING }])
    expect(planner.requests()[0]!.system).toBe('You are a coding agent.\n\nPlan mode: explore read-only, then present the whole plan with exit_plan_mode.')
    expect(builder.requests()).toEqual([])

    await planMode.command.run({ agent, rawInput: 'off' })
    expect((await runTurn([{ role: 'user', content: 'Go ahead.' }])).text).toBe('Added the cache.')
    expect(builder.requests().map((request) => request.raw.providerOptions)).toEqual([CALL_OPTIONS])
    expect(builder.requests()[0]!.system).toBe('You are a coding agent.')
    expect(planner.requests()).toHaveLength(1)
  })

  it('R93: a failing planning model fails the turn; the call\'s model is not tried (no fallback)', async () => {
    const failure = new Error('planner unavailable')
    const planner = respondingModel(() => {
      throw failure
    })
    const builder = scriptedModel([{ text: 'never' }])
    const { planMode, agent, runTurn } = createTwoModelAgent(planner, builder.model)
    services.push(planMode)

    await planMode.command.run({ agent, rawInput: '' })
    await expect(runTurn([{ role: 'user', content: 'Plan it.' }])).rejects.toThrow('planner unavailable')
    expect(builder.requests()).toEqual([])
    expect(agent.session.events.at(-1)?.type).toBe('turn/end')
  })
})

describe('docs/guard.md: a headless CI job (examples/headless-ci.ts)', () => {
  it('docs/guard.md shows examples/headless-ci.ts verbatim', () => {
    expect(GUIDE).toContain(example('headless-ci.ts').trim())
  })

  it("R94: policy 'stop' dismisses the plan: the model gets the dismissal, the run ends in plan mode, the log keeps the plan recorded by: 'policy', and inspect shows dismissed (by policy)", async () => {
    const dir = await mkdtemp(join(tmpdir(), 'plan-mode-ci-'))
    dirs.push(dir)
    const logPath = join(dir, 'ci.jsonl')
    const plan = '# Add a cache\n1. Read the importer.\n2. Put a cache in front of it.'
    const model = scriptedModel([{ toolCalls: [{ name: 'exit_plan_mode', input: { plan } }] }, { text: 'Stopping here.' }])

    const presented = await planInCi(model.model, 'Add a cache to the importer.', logPath)
    expect(presented).toMatchObject({ version: 1, title: 'Add a cache', plan, outcome: 'dismissed', by: 'policy' })
    expect(model.requests()[1]!.toolResults).toEqual([{ toolName: 'exit_plan_mode', output: { type: 'error-text', value: DISMISSED } }])

    const events = (await readFile(logPath, 'utf8')).trim().split('\n').map((line) => JSON.parse(line) as SessionEvent)
    const review = events.find((event) => event.type === 'plan/review')!
    expect(review.data).toEqual({ outcome: 'dismissed', title: 'Add a cache', plan, by: 'policy' })
    expect(Object.keys(review.data as object).at(-1)).toBe('by')
    expect(events.filter((event) => event.type === 'plan/mode').map((event) => event.data)).toEqual([{ active: true }])

    const printed = formatReport(inspectEvents(logPath, events), styles(false))
    expect(printed).toContain(`#${review.seq} "Add a cache": dismissed (by policy)`)
    expect(printed).toMatch(/plan mode \(F\)\s+on/)
    expect(GUIDE).toContain('`plan-mode inspect`\nshows `dismissed (by policy)`')
  })
})
