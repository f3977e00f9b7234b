import { readFileSync } from 'node:fs'
import { afterEach, describe, expect, it } from 'vitest'
import { inspectEvents } from '../apps/cli/inspect.js'
import { createPlanCommand } from '../examples/plan-command.js'
import { PLAN_SECTION } from '../examples/plan-section.js'
import { createMemorySessionLog, createPlanMode, planProjection, type PlanAgent, type PlanMode, type SessionEvent, type SessionLog } from '../src/index.js'
import { planModeSettings } from '../src/options.js'

/**
 * docs/hand-written-loop.md's "What the host logs" and "The plan section" blocks, and its account of the F,
 * pending and K columns of `plan-mode inspect`, checked against the library.
 */
const GUIDE = readFileSync(new URL('../docs/hand-written-loop.md', import.meta.url), 'utf8')
const example = (name: string) => readFileSync(new URL(`../examples/${name}`, import.meta.url), 'utf8')

const services: PlanMode[] = []
afterEach(async () => {
  await Promise.all(services.splice(0).map((service) => service.dispose()))
})

function service(section = PLAN_SECTION): PlanMode {
  const planMode = createPlanMode({ section, logger: { warn: () => {} } })
  services.push(planMode)
  return planMode
}

const strip = (events: readonly SessionEvent[]) => events.map(({ type, data }) => ({ type, data }))

describe('docs/hand-written-loop.md: what the host logs', () => {
  it('docs/hand-written-loop.md shows the logged /plan runner and the plan section verbatim', () => {
    expect(GUIDE).toContain(example('plan-command.ts').trim())
    expect(GUIDE).toContain(example('plan-section.ts').trim())
  })

  it('R58: the runner logs command/run { commandId, name, args: the text after /plan } and command/done { commandId, kind, text }', async () => {
    const planMode = service()
    const agent: PlanAgent = { id: 'main', session: createMemorySessionLog(), steer: () => {} }
    const plan = createPlanCommand(planMode, agent)
    expect(await plan('  draft it ')).toEqual({ kind: 'success', text: 'Plan mode on. Use /plan off to leave.' })
    const [run, mode, done] = strip(agent.session.events)
    const commandId = (run!.data as { commandId: string }).commandId
    expect(commandId).toMatch(/^[0-9a-f-]{36}$/)
    expect([run, mode, done]).toEqual([
      { type: 'command/run', data: { commandId, name: 'plan', args: '  draft it ' } },
      { type: 'plan/mode', data: { active: true } },
      { type: 'command/done', data: { commandId, kind: 'success', text: 'Plan mode on. Use /plan off to leave.' } },
    ])
    await plan('off')
    const ids = agent.session.events.filter((e) => e.type === 'command/run').map((e) => (e.data as { commandId: string }).commandId)
    expect(new Set(ids).size).toBe(2)
  })

  it("R64: a /plan logged after a turn's last step survives a restart; the same /plan unlogged, without a pending store, is lost", async () => {
    async function afterLastStep(log: SessionLog, run: (planMode: PlanMode, agent: PlanAgent) => Promise<unknown>) {
      const planMode = service()
      const agent: PlanAgent = { id: 'main', session: log }
      log.append('turn/start', {})
      await planMode.stepBoundary(agent)
      log.append('request/header', {})
      await run(planMode, agent)
      expect(planMode.get(agent)).toEqual({ active: false, pending: true })
      log.append('turn/end', {})
      await planMode.dispose() // the process ends
      const restarted = service()
      return restarted.get({ id: 'main', session: log })
    }
    const logged = await afterLastStep(createMemorySessionLog(), (planMode, agent) => createPlanCommand(planMode, agent)(''))
    expect(logged).toEqual({ active: false, pending: true })
    const unlogged = await afterLastStep(createMemorySessionLog(), (planMode, agent) => planMode.command.run({ agent, rawInput: '' }))
    expect(unlogged).toEqual({ active: false })
  })

  it('R18, R37: the recommended section is a valid config and is what a plan-mode step sends', async () => {
    expect(planModeSettings({ section: PLAN_SECTION }).section).toBe(PLAN_SECTION)
    const planMode = service()
    const agent: PlanAgent = { id: 'main', session: createMemorySessionLog() }
    await planMode.set(agent, true)
    expect((await planMode.stepBoundary(agent)).section).toBe(PLAN_SECTION)
    expect(PLAN_SECTION).toContain('exit_plan_mode')
  })
})

describe('docs/cli-and-visualizer.md: the F, pending and K columns of plan-mode inspect', () => {
  it('R2, R58, R30, R31: F folds plan/mode, pending shows a logged selection on its way (not an unlogged one), K is the last request/header or an approved review', async () => {
    const review = { ask: async () => ({ answers: [{ id: 'plan-review', selected: ['Approve'] }] }) }
    const planMode = createPlanMode({ section: PLAN_SECTION, review, logger: { warn: () => {} } })
    services.push(planMode)
    const log = createMemorySessionLog()
    const agent: PlanAgent = { id: 'main', session: log }
    const plan = createPlanCommand(planMode, agent)

    log.append('turn/start', {}) // 1
    await planMode.stepBoundary(agent)
    log.append('request/header', {}) // 2
    await plan('') // 3 command/run, 4 command/done: queued (the turn is open)
    await planMode.stepBoundary(agent) // 5 plan/mode on
    log.append('request/header', {}) // 6
    await planMode.exitTool.execute({ plan: '# Plan\n1. Do it.' }, { agent }) // 7 plan/review approved
    log.append('turn/end', {}) // 8
    log.append('turn/start', {}) // 9
    await planMode.stepBoundary(agent) // 10 plan/mode off: the approved exit, without a notice
    log.append('request/header', {}) // 11
    await planMode.command.run({ agent, rawInput: '' }) // unlogged, queued: P is entering...
    expect(planMode.get(agent)).toEqual({ active: false, pending: true })

    const report = inspectEvents('session.jsonl', log.events)
    expect(report.events.map(({ seq, type, active, pending, told }) => [seq, type, active, pending, told])).toEqual([
      [1, 'turn/start', false, false, null], // K: nothing told yet
      [2, 'request/header', false, false, false],
      [3, 'command/run', false, true, false],
      [4, 'command/done', false, true, false], // P: entering, on its way
      [5, 'plan/mode', true, false, false],
      [6, 'request/header', true, false, true],
      [7, 'plan/review', true, true, false], // approved: P leaving; K off (the tool result told it)
      [8, 'turn/end', true, true, false],
      [9, 'turn/start', true, true, false],
      [10, 'plan/mode', false, false, false],
      [11, 'request/header', false, false, false], // ...but the unlogged /plan does not show
    ])
  })
})
