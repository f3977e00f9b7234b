import { customProvider, generateText, jsonSchema, stepCountIs, streamText, tool, type ModelMessage } from 'ai'
import { MockLanguageModelV3 } from 'ai/test'
import { afterEach, describe, expect, it } from 'vitest'
import { withPlanMode, type PlanModeAiSdk, type StepProviderOptions } from '../src/adapters/ai-sdk.js'
import { createMemorySessionLog, createPlanMode, type CommandResult, type PlanAgent, type PlanMode } from '../src/index.js'
import { respondingModel, type ScriptedReply } from '../apps/shared/scripted-model.js'
import { seen, type LoopKind } from './fixtures/ai-sdk-model.js'

const SYSTEM = 'You are a careful coding agent.'
const SECTION = 'Plan mode is on: explore read-only, then present the plan with exit_plan_mode.'
const WITH_SECTION = `${SYSTEM}\n\n${SECTION}`
const NO_MODEL = 'withPlanMode option planning needs a model: planning is { model, providerOptions? }'

const services: PlanMode[] = []
afterEach(async () => {
  await Promise.all(services.splice(0).map((service) => service.dispose()))
  delete (globalThis as { AI_SDK_DEFAULT_PROVIDER?: unknown }).AI_SDK_DEFAULT_PROVIDER
})

/** Which model served each request of the call, in order (the loop's steps run one at a time). */
type Served = ('planning' | 'default')[]

/** A scripted model that records, in `served`, each step it answered. */
function recordingModel(name: Served[number], served: Served, script: ScriptedReply[]) {
  const model = respondingModel(
    (_options, i) => {
      served.push(name)
      return script[i] ?? { text: 'Done.' }
    },
    { modelId: name },
  )
  return { model, requests: () => [...model.doGenerateCalls, ...model.doStreamCalls].map(seen) }
}

/** A model whose every request fails with `failure`. */
function failingModel(failure: Error): MockLanguageModelV3 {
  return new MockLanguageModelV3({
    modelId: 'planning',
    doGenerate: async () => {
      throw failure
    },
    doStream: async () => {
      throw failure
    },
  })
}

const readFile = tool({
  description: 'Read a file of the repository.',
  inputSchema: jsonSchema<{ path: string }>({ type: 'object', properties: { path: { type: 'string' } }, required: ['path'] }),
  execute: async ({ path }) => `contents of ${path}`,
})

/** A host tool standing for the user's UI: each call types `/plan <rawInput>` mid-turn. */
function clickTool(run: (rawInput: string) => Promise<CommandResult>) {
  return tool({
    description: 'Stands for a click in the host UI.',
    inputSchema: jsonSchema<{ rawInput: string }>({ type: 'object', properties: { rawInput: { type: 'string' } }, required: ['rawInput'] }),
    execute: async ({ rawInput }) => (await run(rawInput)).text,
  })
}

type Tools = { read_file: typeof readFile; user_clicks: ReturnType<typeof clickTool> }

function setup(planning: Parameters<typeof withPlanMode>[0]['planning']) {
  const session = createMemorySessionLog()
  const planMode = createPlanMode({ section: SECTION, logger: { warn: () => {} } })
  services.push(planMode)
  const agent: PlanAgent = { id: 'agent-1', session }
  const clicks: CommandResult[] = []
  const user_clicks = clickTool(async (rawInput) => {
    const result = await planMode.command.run({ agent, rawInput })
    clicks.push(result)
    return result
  })
  const plan: PlanModeAiSdk<Tools> = withPlanMode({ planMode, agent, system: SYSTEM, tools: { read_file: readFile, user_clicks }, planning })
  const modes = () => session.events.filter((e) => e.type === 'plan/mode').map((e) => (e.data as { active: boolean }).active)
  return { planMode, agent, session, plan, clicks, modes }
}

/** One turn of the real SDK loop with the call's own `model` (and `providerOptions`). */
async function runLoop(
  kind: LoopKind,
  plan: PlanModeAiSdk<Tools>,
  model: MockLanguageModelV3,
  steps: number,
  providerOptions?: StepProviderOptions,
): Promise<void> {
  const messages: ModelMessage[] = [{ role: 'user', content: [{ type: 'text', text: 'plan the migration' }] }]
  await plan.runTurn(async () => {
    const settings = {
      model,
      messages,
      tools: plan.tools,
      prepareStep: plan.prepareStep,
      stopWhen: stepCountIs(steps),
      ...(providerOptions === undefined ? {} : { providerOptions }),
    }
    if (kind === 'generateText') {
      await generateText(settings)
      return
    }
    let failure: unknown
    const result = streamText({ ...settings, onError: ({ error }) => void (failure ??= error) })
    await result.consumeStream()
    if (failure !== undefined) throw failure
  })
}

const click = (rawInput: string): ScriptedReply => ({ toolCalls: [{ name: 'user_clicks', input: { rawInput } }] })
const read = (path: string): ScriptedReply => ({ toolCalls: [{ name: 'read_file', input: { path } }] })

describe.each<LoopKind>(['generateText', 'streamText'])('withPlanMode planning model with %s', (kind) => {
  it('R93: a turn in plan mode runs every step on the planning model; the call model serves none', async () => {
    const served: Served = []
    const planner = recordingModel('planning', served, [read('schema.sql'), read('migrations/'), { text: 'Here is my plan.' }])
    const fallback = recordingModel('default', served, [])
    const host = setup({ model: planner.model })
    expect(await host.planMode.set(host.agent, true)).toBe('committed')

    await runLoop(kind, host.plan, fallback.model, 5)

    expect(served).toEqual(['planning', 'planning', 'planning'])
    expect(planner.requests().map((r) => r.system)).toEqual([WITH_SECTION, WITH_SECTION, WITH_SECTION])
    expect(fallback.requests()).toEqual([])
  })

  it('R93: outside plan mode every step runs on the call model; the planning model serves none', async () => {
    const served: Served = []
    const planner = recordingModel('planning', served, [])
    const fallback = recordingModel('default', served, [read('schema.sql'), { text: 'Done.' }])
    const host = setup({ model: planner.model })

    await runLoop(kind, host.plan, fallback.model, 5)

    expect(served).toEqual(['default', 'default'])
    expect(fallback.requests().map((r) => r.system)).toEqual([SYSTEM, SYSTEM])
    expect(planner.requests()).toEqual([])
  })

  it('R93: /plan off typed during a tool call switches to the call model at the next step, and /plan back to the planning model', async () => {
    const served: Served = []
    const planner = recordingModel('planning', served, [click('off'), { text: 'Planning again.' }])
    const fallback = recordingModel('default', served, [click('')])
    const host = setup({ model: planner.model })
    expect(await host.planMode.set(host.agent, true)).toBe('committed')

    await runLoop(kind, host.plan, fallback.model, 5)

    expect(host.clicks).toEqual([
      { kind: 'success', text: 'Leaving plan mode (applies from the next step).' },
      { kind: 'success', text: 'Entering plan mode (applies from the next step). Use /plan off to leave.' },
    ])
    expect(served).toEqual(['planning', 'default', 'planning'])
    // Exactly the planning steps (the requests with the section) ran on the planning model.
    expect(planner.requests().map((r) => r.system)).toEqual([WITH_SECTION, WITH_SECTION])
    expect(fallback.requests().map((r) => r.system)).toEqual([SYSTEM])
    expect(host.modes()).toEqual([true, false, true])
    expect(host.session.events.filter((e) => e.type === 'request/header').map((e) => e.data)).toEqual([
      { step: 0 },
      { step: 1 },
      { step: 2 },
    ])
  })

  it("R93: planning providerOptions reach only the planning steps, merged over the call's own", async () => {
    const served: Served = []
    const planner = recordingModel('planning', served, [click('off')])
    const fallback = recordingModel('default', served, [click(''), { text: 'Done.' }])
    const callOptions = { scripted: { shared: 'call', callOnly: 1 }, other: { keep: true } }
    const planningOptions = { scripted: { shared: 'planning', effort: 'high' } }
    const host = setup({ model: planner.model, providerOptions: planningOptions })

    await runLoop(kind, host.plan, fallback.model, 5, callOptions)

    expect(served).toEqual(['default', 'planning', 'default'])
    expect(planner.requests().map((r) => r.raw.providerOptions)).toEqual([
      { scripted: { shared: 'planning', callOnly: 1, effort: 'high' }, other: { keep: true } },
    ])
    expect(fallback.requests().map((r) => r.raw.providerOptions)).toEqual([callOptions, callOptions])
    // The host's objects are not changed by the merge.
    expect(planningOptions).toEqual({ scripted: { shared: 'planning', effort: 'high' } })
  })

  it('R93: without call providerOptions the planning step gets the planning ones alone and the other steps none', async () => {
    const served: Served = []
    const planner = recordingModel('planning', served, [click('off')])
    const fallback = recordingModel('default', served, [])
    const host = setup({ model: planner.model, providerOptions: { scripted: { effort: 'high' } } })
    await host.planMode.set(host.agent, true)

    await runLoop(kind, host.plan, fallback.model, 5)

    expect(served).toEqual(['planning', 'default'])
    expect(planner.requests()[0]!.raw.providerOptions).toEqual({ scripted: { effort: 'high' } })
    expect(fallback.requests()[0]!.raw.providerOptions).toBeUndefined()
  })

  it('R93: a failing planning model fails the call with its error; the call model is never tried', async () => {
    const failure = new Error('the planning model is overloaded')
    const served: Served = []
    const fallback = recordingModel('default', served, [])
    const host = setup({ model: failingModel(failure) })
    await host.planMode.set(host.agent, true)

    await expect(runLoop(kind, host.plan, fallback.model, 5)).rejects.toBe(failure)

    expect(served).toEqual([])
    expect(fallback.requests()).toEqual([])
    expect(host.session.events.map((e) => e.type)).toEqual(['plan/mode', 'turn/start', 'request/header', 'turn/end'])
  })

  it('R93: a planning model failing after a mid-turn /plan fails the call; the call model, which served the step before, is not tried', async () => {
    const failure = new Error('the planning model is overloaded')
    const served: Served = []
    const fallback = recordingModel('default', served, [click(''), { text: 'Done.' }])
    const planner = failingModel(failure)
    const host = setup({ model: planner })

    await expect(runLoop(kind, host.plan, fallback.model, 5)).rejects.toBe(failure)

    expect(served).toEqual(['default'])
    expect(planner.doGenerateCalls.length + planner.doStreamCalls.length).toBe(1)
    expect(host.modes()).toEqual([true])
  })

  it('R93: a model id string is resolved by the SDK, as prepareStep resolves any model id', async () => {
    const served: Served = []
    const planner = recordingModel('planning', served, [{ text: 'Here is my plan.' }])
    const fallback = recordingModel('default', served, [])
    ;(globalThis as { AI_SDK_DEFAULT_PROVIDER?: unknown }).AI_SDK_DEFAULT_PROVIDER = customProvider({
      languageModels: { 'acme/planner': planner.model },
    })
    const host = setup({ model: 'acme/planner' })
    await host.planMode.set(host.agent, true)

    await runLoop(kind, host.plan, fallback.model, 5)

    expect(served).toEqual(['planning'])
  })
})

describe('withPlanMode planning option', () => {
  const planMode = () => {
    const service = createPlanMode({ section: SECTION, logger: { warn: () => {} } })
    services.push(service)
    return service
  }
  const agent: PlanAgent = { id: 'agent-1', session: createMemorySessionLog() }
  const make = (planning: unknown) => () =>
    withPlanMode({ planMode: planMode(), agent, planning: planning as Parameters<typeof withPlanMode>[0]['planning'] })
  const model = respondingModel(() => ({ text: 'ok' }))

  it('R93: a planning option without a model throws a TypeError', () => {
    for (const planning of [{}, { providerOptions: { scripted: {} } }, { model: undefined }, { model: null }, null, 'acme/planner']) {
      expect(make(planning)).toThrow(new TypeError(NO_MODEL))
      expect(make(planning)).toThrow(TypeError)
    }
  })

  it('R93: a wrong model, providerOptions or key throws a TypeError naming it', () => {
    const badModel = (got: string) =>
      new TypeError(`withPlanMode option planning.model must be a language model (specificationVersion v3 or v2) or a model id string; got ${got}`)
    expect(make({ model: 42 })).toThrow(badModel('number'))
    expect(make({ model: '  ' })).toThrow(badModel('"  "'))
    expect(make({ model: { specificationVersion: 'v1' } })).toThrow(badModel('an object without a specificationVersion of v3 or v2'))
    expect(make({ model: [model] })).toThrow(badModel('an array'))
    const badOptions = (got: string) =>
      new TypeError(`withPlanMode option planning.providerOptions must be an object of options by provider name; got ${got}`)
    expect(make({ model, providerOptions: null })).toThrow(badOptions('null'))
    expect(make({ model, providerOptions: 'high' })).toThrow(badOptions('"high"'))
    expect(make({ model, providerOptions: [] })).toThrow(badOptions('an array'))
    expect(make({ model, temperature: 0, [Symbol('x')]: 1 })).toThrow(
      new TypeError('withPlanMode option planning has unknown key(s) temperature, Symbol(x) — planning is { model, providerOptions? }'),
    )
  })

  it('R93: a model object, a model id and providerOptions are accepted; no planning option changes nothing', () => {
    expect(make({ model })).not.toThrow()
    expect(make({ model: 'acme/planner', providerOptions: { acme: { effort: 'high' } } })).not.toThrow()
    expect(make(undefined)).not.toThrow()
  })
})
