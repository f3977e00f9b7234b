import fc from 'fast-check'
import { afterEach, describe, expect, it } from 'vitest'
import { formatReport, inspectEvents } from '../apps/cli/inspect.js'
import { styles } from '../apps/cli/io.js'
import { createPlanModeInspector, type InspectionMessage } from '../src/adapters/inspect.js'
import { blockedToolMessage, createPlanGuard, foldViolations, isReadOnlyTool, readOnlyTool, type GuardAction, type PlanGuard } from '../src/guard/index.js'
import { createMemorySessionLog, createPlanMode, type PlanAgent, type PlanMode, type SessionLog } from '../src/index.js'
import { PLAN_VIOLATION_EVENT } from '../src/log/kinds.js'
import { createLogReader } from '../apps/shared/visualizer/log-reading.js'
import { SECTION } from './helpers.js'

const BLOCKED = 'write_file is not available in plan mode; present your plan with exit_plan_mode first.'

const services: PlanMode[] = []
afterEach(async () => {
  await Promise.all(services.splice(0).map((service) => service.dispose()))
})

/** A service, one agent on a memory log, a guard with `action`, and the warnings its logger got. */
function setup(action: GuardAction, session: SessionLog = createMemorySessionLog(), guardOptions: { recordTimeoutMs?: number } = {}) {
  const warnings: unknown[][] = []
  const planMode = createPlanMode({ section: SECTION, logger: { warn: (...args: unknown[]) => warnings.push(args) } })
  services.push(planMode)
  const agent: PlanAgent = { id: 'agent-1', session }
  const guard = createPlanGuard({ planMode, action, logger: { warn: (...args: unknown[]) => warnings.push(args) }, ...guardOptions })
  /** A write tool: it logs that it ran, so the log shows what came first. */
  const write = (callId: string) =>
    guard.run(agent, { tool: 'write_file', callId, readOnly: false }, () => {
      session.append('tool/ran', { callId })
      return 'written'
    })
  const types = () => session.events.map((e) => e.type)
  return { planMode, agent, guard, session, warnings, write, types }
}

describe('R88: the guard is opt-in, configured by the host, and classifies tools', () => {
  it('R88: isReadOnlyTool reads readOnly, then MCP annotations.readOnlyHint; anything else (or unreadable) is side-effecting; readOnlyTool marks a copy', () => {
    expect(isReadOnlyTool({ readOnly: true })).toBe(true)
    expect(isReadOnlyTool({ readOnly: false, annotations: { readOnlyHint: true } })).toBe(false)
    expect(isReadOnlyTool({ annotations: { readOnlyHint: true } })).toBe(true)
    expect(isReadOnlyTool({ annotations: { readOnlyHint: 'yes' } })).toBe(false)
    expect(isReadOnlyTool({ annotations: null })).toBe(false)
    expect(isReadOnlyTool({ description: 'writes a file' })).toBe(false)
    expect(isReadOnlyTool(undefined)).toBe(false)
    const hostile = Object.defineProperty({}, 'readOnly', { get: () => { throw new Error('no') } })
    expect(isReadOnlyTool(hostile)).toBe(false)
    const write = { description: 'Write.', readOnly: false }
    expect(readOnlyTool(write)).toEqual({ description: 'Write.', readOnly: true })
    expect(write.readOnly).toBe(false) // a copy: the host's tool is untouched
  })

  it('R88: only the tool\'s own readOnly counts: an inherited one, a class getter and Object.prototype.readOnly leave the tool side-effecting', () => {
    class ClassTool {
      get readOnly() {
        return true
      }
    }
    const polluted = Object.prototype as { readOnly?: unknown }
    try {
      polluted.readOnly = true
      expect(isReadOnlyTool({ description: 'Write.' })).toBe(false)
    } finally {
      delete polluted.readOnly
    }
    expect(isReadOnlyTool(Object.create({ readOnly: true }))).toBe(false)
    expect(isReadOnlyTool(new ClassTool())).toBe(false)
    // The same for MCP's hint: an own readOnlyHint of an own annotations object.
    expect(isReadOnlyTool(Object.create({ annotations: { readOnlyHint: true } }))).toBe(false)
    expect(isReadOnlyTool({ annotations: Object.create({ readOnlyHint: true }) })).toBe(false)
    // An own getter is the tool's own property: read once.
    let reads = 0
    const own = Object.defineProperty({}, 'readOnly', { get: () => (reads++, true) })
    expect(isReadOnlyTool(own)).toBe(true)
    expect(reads).toBe(1)
  })

  it('R88: a throwing readOnly or annotations getter makes the tool side-effecting; a call whose readOnly cannot be read is guarded, not thrown', async () => {
    const throwing = (key: string) => Object.defineProperty({}, key, { get: () => { throw new Error(`no ${key}`) } })
    expect(isReadOnlyTool(throwing('readOnly'))).toBe(false)
    expect(isReadOnlyTool(throwing('annotations'))).toBe(false)
    expect(isReadOnlyTool({ annotations: throwing('readOnlyHint') })).toBe(false)
    const { planMode, agent, guard, session } = setup('block')
    await planMode.set(agent, true)
    const call = Object.defineProperties({}, { tool: { value: 'write_file' }, callId: { value: 'c1' }, readOnly: { get: () => { throw new Error('no readOnly') } } })
    await expect(guard.run(agent, call as never, () => 'ran')).rejects.toThrow(new Error(BLOCKED))
    expect(session.events.at(-1)!.data).toEqual({ tool: 'write_file', callId: 'c1', action: 'blocked' })
  })

  it('R88: createPlanGuard refuses a missing service and an action other than observe or block, with exact TypeErrors', () => {
    const planMode = createPlanMode({ section: SECTION })
    services.push(planMode)
    expect(() => createPlanGuard({ action: 'block' } as never)).toThrow(new TypeError('plan guard needs a plan-mode service (createPlanMode)'))
    expect(() => createPlanGuard({ planMode, action: 'warn' } as never)).toThrow(new TypeError(`plan guard action must be 'observe' or 'block'; got "warn"`))
    expect(() => createPlanGuard({ planMode } as never)).toThrow(new TypeError(`plan guard action must be 'observe' or 'block'; got undefined`))
    expect(createPlanGuard({ planMode, action: 'observe' }).action).toBe('observe')
  })
})

describe('R89, R90: a side-effecting call while plan mode is in force is observed or blocked, and recorded', () => {
  it('R89, R90: observe: the call runs after its plan/violation record', async () => {
    const { planMode, agent, write, types, session } = setup('observe')
    await planMode.set(agent, true)
    await expect(write('call-1')).resolves.toBe('written')
    expect(types()).toEqual(['plan/mode', 'plan/violation', 'tool/ran'])
    expect(session.events[1]!.data).toEqual({ tool: 'write_file', callId: 'call-1', action: 'observed' })
  })

  it('R89, R90: block: the call does not run; it fails with the exact message after its record', async () => {
    const { planMode, agent, write, types, session } = setup('block')
    await planMode.set(agent, true)
    await expect(write('call-1')).rejects.toThrow(new Error(BLOCKED))
    expect(blockedToolMessage('write_file')).toBe(BLOCKED)
    expect(types()).toEqual(['plan/mode', 'plan/violation'])
    expect(session.events[1]!.data).toEqual({ tool: 'write_file', callId: 'call-1', action: 'blocked' })
  })

  it('R89: read-only calls, exit_plan_mode, and every call in the default mode run unrecorded', async () => {
    const { planMode, agent, guard, types, write } = setup('block')
    await expect(write('call-0')).resolves.toBe('written')
    await planMode.set(agent, true)
    await expect(guard.run(agent, { tool: 'read_file', callId: 'c1', readOnly: true }, () => 'read')).resolves.toBe('read')
    await expect(guard.run(agent, { tool: 'exit_plan_mode', callId: 'c2', readOnly: false }, () => 'exit')).resolves.toBe('exit')
    await expect(guard.check(agent, { tool: 'grep', callId: 'c3', readOnly: true })).resolves.toBeUndefined()
    expect(types()).toEqual(['tool/ran', 'plan/mode'])
  })

  it('R89: the state in force is F: a /plan off queued mid-turn still guards until the boundary, a queued /plan does not guard before it', async () => {
    const { planMode, agent, session, write, types } = setup('block')
    await planMode.set(agent, true)
    session.append('turn/start', {})
    await planMode.stepBoundary(agent)
    expect(await planMode.set(agent, false)).toBe('queued')
    await expect(write('c1')).rejects.toThrow(BLOCKED)
    await planMode.stepBoundary(agent)
    await expect(write('c2')).resolves.toBe('written')
    expect(await planMode.set(agent, true)).toBe('queued')
    await expect(write('c3')).resolves.toBe('written')
    await planMode.stepBoundary(agent)
    await expect(write('c4')).rejects.toThrow(BLOCKED)
    expect(types()).toEqual(['plan/mode', 'turn/start', 'plan/violation', 'plan/mode', 'tool/ran', 'tool/ran', 'plan/mode', 'plan/violation'])
  })

  it('R90: the guard never writes plan state: F, P, K, the section and the log\'s plan events are those of an unguarded twin (property)', async () => {
    type Op = { kind: 'set'; active: boolean } | { kind: 'turn'; open: boolean } | { kind: 'boundary' } | { kind: 'call'; readOnly: boolean }
    const op: fc.Arbitrary<Op> = fc.oneof(
      fc.record({ kind: fc.constant('set' as const), active: fc.boolean() }),
      fc.record({ kind: fc.constant('turn' as const), open: fc.boolean() }),
      fc.record({ kind: fc.constant('boundary' as const) }),
      fc.record({ kind: fc.constant('call' as const), readOnly: fc.boolean() }),
    )
    await fc.assert(
      fc.asyncProperty(fc.constantFrom<GuardAction>('observe', 'block'), fc.array(op, { maxLength: 25 }), async (action, ops) => {
        const guarded = setup(action)
        const twin = setup(action)
        let call = 0
        for (const step of ops) {
          for (const side of [guarded, twin]) {
            if (step.kind === 'set') await side.planMode.set(side.agent, step.active)
            else if (step.kind === 'turn') side.session.append(step.open ? 'turn/start' : 'turn/end', {})
            else if (step.kind === 'boundary') await side.planMode.stepBoundary(side.agent)
          }
          if (step.kind === 'call') {
            call++
            await guarded.guard.run(guarded.agent, { tool: 'write_file', callId: `c${call}`, readOnly: step.readOnly }, () => 'ran').catch(() => {})
          }
          expect(guarded.planMode.get(guarded.agent)).toEqual(twin.planMode.get(twin.agent))
          expect(guarded.planMode.section(guarded.agent)).toBe(twin.planMode.section(twin.agent))
          const snapshot = (side: typeof guarded) => side.planMode.actor(side.agent).getSnapshot()
          expect(snapshot(guarded).value).toEqual(snapshot(twin).value)
        }
        const plain = (session: SessionLog) => session.events.filter((e) => e.type !== PLAN_VIOLATION_EVENT).map((e) => [e.type, e.data])
        expect(plain(guarded.session)).toEqual(plain(twin.session))
        await Promise.all(services.splice(0).map((service) => service.dispose()))
      }),
      { numRuns: 150 },
    )
  })
})

describe('R91: the guard\'s faults are contained', () => {
  function failingLog(): SessionLog {
    const inner = createMemorySessionLog()
    return {
      get events() {
        return inner.events
      },
      append: (type, data) => (type === PLAN_VIOLATION_EVENT ? Promise.reject(new Error('disk full')) : inner.append(type, data)),
      subscribe: (listener) => inner.subscribe(listener),
    }
  }

  it('R91: a record that cannot be appended is warned; observe still runs the call, block still refuses it', async () => {
    for (const action of ['observe', 'block'] as const) {
      const { planMode, agent, write, warnings, types } = setup(action, failingLog())
      await planMode.set(agent, true)
      if (action === 'observe') await expect(write('c1')).resolves.toBe('written')
      else await expect(write('c1')).rejects.toThrow(BLOCKED)
      expect(warnings).toEqual([['plan-mode: violation record failed', new Error('disk full')]])
      expect(types()).toEqual(action === 'observe' ? ['plan/mode', 'tool/ran'] : ['plan/mode'])
      // The actor goes on working.
      expect(await planMode.set(agent, false)).toBe('committed')
    }
  })

  it('R91: when the mode cannot be read, the guard warns and fails safe: block refuses the call, observe runs it unrecorded', async () => {
    for (const action of ['observe', 'block'] as const) {
      const { planMode, write, warnings, types } = setup(action)
      await planMode.dispose()
      if (action === 'observe') await expect(write('c1')).resolves.toBe('written')
      else await expect(write('c1')).rejects.toThrow(BLOCKED)
      expect(warnings).toEqual([['plan-mode: guard could not read the mode', new Error('plan-mode service is disposed')]])
      expect(types()).toEqual(action === 'observe' ? ['tool/ran'] : ['plan/violation'])
    }
  })

  /** A log whose plan/violation append answers `answer` (anything else is appended as usual). */
  function answeringLog(answer: () => unknown): SessionLog {
    const inner = createMemorySessionLog()
    return {
      get events() {
        return inner.events
      },
      append: (type, data) => (type === PLAN_VIOLATION_EVENT ? answer() : inner.append(type, data)),
      subscribe: (listener) => inner.subscribe(listener),
    } as SessionLog
  }

  const hostileAnswers: [string, () => unknown, Error][] = [
    ['a Proxy whose every read throws', () => new Proxy({}, { get: () => { throw new Error('proxy trap') } }), new Error('proxy trap')],
    ['a thenable whose then getter throws', () => Object.defineProperty({}, 'then', { get: () => { throw new Error('then getter') } }), new Error('then getter')],
    ['a thenable whose then throws', () => ({ then: () => { throw new Error('then threw') } }), new Error('then threw')],
  ]
  for (const [what, answer, error] of hostileAnswers) {
    it(`R91, R62: an append answering ${what} is a failed record: warned, and the call goes on as decided`, async () => {
      for (const action of ['observe', 'block'] as const) {
        const { planMode, agent, write, warnings, types } = setup(action, answeringLog(answer))
        await planMode.set(agent, true)
        if (action === 'observe') await expect(write('c1')).resolves.toBe('written')
        else await expect(write('c1')).rejects.toThrow(new Error(BLOCKED))
        expect(warnings).toEqual([['plan-mode: violation record failed', error]])
        expect(types()).toEqual(action === 'observe' ? ['plan/mode', 'tool/ran'] : ['plan/mode'])
      }
    })
  }

  it('R91, R73: an append that fails after recordTimeoutMs expired is warned once, for the expiry', async () => {
    let fail!: (error: Error) => void
    const late = new Promise((_, reject) => (fail = reject))
    const { planMode, agent, write, warnings } = setup('block', answeringLog(() => late), { recordTimeoutMs: 20 })
    await planMode.set(agent, true)
    await expect(write('c1')).rejects.toThrow(new Error(BLOCKED))
    fail(new Error('disk full'))
    await late.catch(() => {})
    await new Promise((resolve) => setImmediate(resolve)) // the guard's own handler runs after the test's
    expect(warnings).toEqual([['plan-mode: violation record failed', new Error('the plan/violation record did not settle within 20 ms')]])
  })

  it('R91, R73: an append that never settles is given up after recordTimeoutMs: warned, and the call goes on as decided', async () => {
    for (const action of ['observe', 'block'] as const) {
      const { planMode, agent, write, warnings, types } = setup(action, answeringLog(() => new Promise(() => {})), { recordTimeoutMs: 20 })
      await planMode.set(agent, true)
      if (action === 'observe') await expect(write('c1')).resolves.toBe('written')
      else await expect(write('c1')).rejects.toThrow(new Error(BLOCKED))
      expect(warnings).toEqual([['plan-mode: violation record failed', new Error('the plan/violation record did not settle within 20 ms')]])
      expect(types()).toEqual(action === 'observe' ? ['plan/mode', 'tool/ran'] : ['plan/mode'])
    }
  })

  it('R91: recordTimeoutMs is a number of milliseconds from 0 to 2147483647; anything else throws an exact TypeError', () => {
    const planMode = createPlanMode({ section: SECTION })
    services.push(planMode)
    for (const value of [-1, 2147483648, Number.NaN, '20', null]) {
      expect(() => createPlanGuard({ planMode, action: 'block', recordTimeoutMs: value as never })).toThrow(
        new TypeError(`plan guard option recordTimeoutMs must be a number of milliseconds from 0 to 2147483647; got ${String(value)}`),
      )
    }
    expect(createPlanGuard({ planMode, action: 'block', recordTimeoutMs: 0 }).action).toBe('block')
  })

  it('R91: a logger that throws is ignored', async () => {
    const session: SessionLog = { ...createMemorySessionLog(), append: () => Promise.reject(new Error('disk full')) }
    const planMode = createPlanMode({ section: SECTION })
    services.push(planMode)
    const agent: PlanAgent = { id: 'agent-1', session: createMemorySessionLog() }
    await planMode.set(agent, true)
    const guard: PlanGuard = createPlanGuard({ planMode, action: 'observe', logger: { warn: () => { throw new Error('logger down') } } })
    await expect(guard.run({ ...agent, session }, { tool: 'write_file', callId: 'c1', readOnly: false }, () => 'ran')).resolves.toBe('ran')
  })
})

describe('R92: violations show up where people look', () => {
  const log = createMemorySessionLog([
    { type: 'plan/mode', data: { active: true } },
    { type: 'plan/violation', data: { tool: 'write_file', callId: 'c1', action: 'observed' } },
    { type: 'plan/violation', data: { tool: 'bash', callId: 'c2', action: 'blocked' } },
    { type: 'plan/violation', data: { tool: 'write_file', callId: 'c3', action: 'blocked' } },
    { type: 'plan/violation', data: { tool: '__proto__', callId: 'c4', action: 'blocked' } },
    { type: 'plan/violation', data: { tool: 'bash', callId: 5, action: 'blocked' } },
    { type: 'plan/violation', data: { tool: 'bash', callId: 'c6', action: 'ignored' } },
    { type: 'plan/violation', data: null },
  ])

  it('R92: foldViolations counts totals and per tool and lists every readable record; unreadable ones are skipped', () => {
    const fold = foldViolations(log.events)
    expect(fold.observed).toBe(1)
    expect(fold.blocked).toBe(3)
    expect(Object.entries(fold.byTool)).toEqual([
      ['write_file', { observed: 1, blocked: 1 }],
      ['bash', { observed: 0, blocked: 1 }],
      ['__proto__', { observed: 0, blocked: 1 }],
    ])
    expect(fold.entries).toEqual([
      { seq: 2, tool: 'write_file', callId: 'c1', action: 'observed' },
      { seq: 3, tool: 'bash', callId: 'c2', action: 'blocked' },
      { seq: 4, tool: 'write_file', callId: 'c3', action: 'blocked' },
      { seq: 5, tool: '__proto__', callId: 'c4', action: 'blocked' },
    ])
    expect(foldViolations([])).toEqual({ observed: 0, blocked: 0, byTool: {}, entries: [] })
  })

  it('R92: plan-mode inspect shows each record in its table and the violations after the reviews', () => {
    const report = inspectEvents('session.jsonl', log.events.slice(0, 4))
    expect(report.events.map((row) => row.detail)).toEqual(['active: true', 'observed write_file (call c1)', 'blocked bash (call c2)', 'blocked write_file (call c3)'])
    const text = formatReport(report, styles(false))
    expect(text.slice(text.indexOf('Plan reviews:'))).toBe(
      [
        'Plan reviews:',
        '  none',
        '',
        'Plan-mode violations: 1 observed, 2 blocked',
        '  write_file: 1 observed, 1 blocked',
        '  bash: 0 observed, 1 blocked',
        '  #2 write_file observed (call c1)',
        '  #3 bash blocked (call c2)',
        '  #4 write_file blocked (call c3)',
        '',
      ].join('\n'),
    )
    // A log without records (an unguarded agent's) gets no section.
    expect(formatReport(inspectEvents('session.jsonl', log.events.slice(0, 1)), styles(false))).toMatch(/Plan reviews:\n  none\n$/)
    expect(inspectEvents('session.jsonl', log.events, 2).violations.entries).toEqual([{ seq: 2, tool: 'write_file', callId: 'c1', action: 'observed' }])
  })

  it('R92: the visualizer\'s timeline tells a blocked and an observed call', () => {
    const reader = createLogReader()
    const stories = log.events.slice(1, 3).map((event) => reader.read('agent-1', event).story)
    expect(stories).toEqual([
      { tone: 'violation', label: 'Ran in plan mode: write_file', detail: 'call c1' },
      { tone: 'violation', label: 'Blocked in plan mode: bash', detail: 'call c2' },
    ])
  })

  it('R92: the inspection stream carries a guard\'s record as a plan-mode.log message', async () => {
    const messages: InspectionMessage[] = []
    const inspector = createPlanModeInspector({ send: (message) => messages.push(message) })
    const { planMode, agent, write } = setup('block')
    const unwatch = inspector.watch(agent, planMode.actor(agent))
    await planMode.set(agent, true)
    await write('c1').catch(() => {})
    unwatch()
    await inspector.stop()
    const logged = messages.flatMap((m) => (m.type === 'plan-mode.log' ? [[m.event.type, m.event.data]] : []))
    expect(logged).toEqual([
      ['plan/mode', { active: true }],
      ['plan/violation', { tool: 'write_file', callId: 'c1', action: 'blocked' }],
    ])
  })
})
