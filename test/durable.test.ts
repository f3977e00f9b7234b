import { fork } from 'node:child_process'
import { mkdir, mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createPlanMode } from '../src/index.js'
import { openJsonlPendingStore, openJsonlSessionLog } from '../src/node.js'
import { buildForChild } from './fixtures/build.js'

const here = dirname(fileURLToPath(import.meta.url))
const CHILD = join(here, 'fixtures/pending-service-child.mjs')
const ENTERING = 'The user switched this session to plan mode.'

let buildDir: string
let dir: string
let indexUrl: string
let nodeUrl: string

beforeAll(async () => {
  // Inside the repository, so that the child resolves xstate from node_modules.
  await mkdir(join(here, 'artifacts'), { recursive: true })
  buildDir = await mkdtemp(join(here, 'artifacts', 'child-build-'))
  ;[indexUrl, nodeUrl] = (await buildForChild(buildDir, ['index.ts', 'node.ts'])) as [string, string]
  dir = await mkdtemp(join(tmpdir(), 'plan-mode-durable-'))
})

afterAll(async () => {
  await rm(buildDir, { recursive: true, force: true })
  await rm(dir, { recursive: true, force: true })
})

describe('durable pending selections', () => {
  it('R64: a selection pending when the host is killed applies at the first boundary after a restart', async () => {
    const logPath = join(dir, 'session.jsonl')
    const storePath = join(dir, 'pending.json')
    const child = fork(CHILD, [indexUrl, nodeUrl, logPath, storePath], { stdio: ['ignore', 'ignore', 'inherit', 'ipc'] })
    const report = await new Promise<unknown>((resolve, reject) => {
      child.once('message', resolve)
      child.once('exit', (code) => reject(new Error(`child exited early with ${code}`)))
    })
    expect(report).toEqual({ outcome: 'queued', state: { active: false, pending: true } })
    child.kill('SIGKILL')
    await new Promise((resolve) => child.once('exit', resolve))

    const session = await openJsonlSessionLog(resolve(logPath), { logger: { warn() {} } })
    const store = openJsonlPendingStore(storePath)
    const planMode = createPlanMode({ section: 'PLAN', pendingStore: store })
    const agent = { id: 'agent-1', session }
    // The log alone cannot tell (no command/run was logged); the store can.
    expect(planMode.get(agent)).toEqual({ active: false, pending: true })
    await session.append('turn/start', {})
    const step = await planMode.stepBoundary(agent)
    expect(step.section).toBe('PLAN')
    expect(step.messages.map((m) => (m.content[0] as { text: string }).text)).toEqual([ENTERING])
    expect(session.events.map((e) => e.type)).toEqual([
      'turn/start',
      'request/header',
      'turn/end',
      'turn/start',
      'plan/mode',
    ])
    expect(store.get('agent-1')).toBeUndefined()
    await planMode.dispose()
    await session.close()
  })

  it('R12: without a pending store the same selection is lost at restart (the original behaviour)', async () => {
    const logPath = join(dir, 'lost.jsonl')
    const session = await openJsonlSessionLog(logPath)
    const first = createPlanMode({ section: 'PLAN' })
    const agent = { id: 'a', session }
    await session.append('turn/start', {})
    expect(await first.set(agent, true)).toBe('queued')
    await session.append('turn/end', {})
    await session.close()
    const reopened = await openJsonlSessionLog(logPath)
    expect(createPlanMode({ section: 'PLAN' }).get({ id: 'a', session: reopened })).toEqual({ active: false })
    await reopened.close()
  })

  it('R6: a pending store keeps each agent apart and forgets a cancelled selection', async () => {
    const store = openJsonlPendingStore(join(dir, 'agents.json'))
    const planMode = createPlanMode({ section: 'PLAN', pendingStore: store })
    const logs = await Promise.all(['a', 'b'].map((id) => openJsonlSessionLog(join(dir, `${id}.jsonl`))))
    const [a, b] = logs.map((session, i) => ({ id: ['a', 'b'][i]!, session }))
    for (const log of logs) await log.append('turn/start', {})
    await planMode.set(a!, true)
    await planMode.set(b!, true)
    expect([store.get('a'), store.get('b')]).toEqual([true, true])
    expect(await planMode.set(b!, false)).toBe('cancelled')
    expect([store.get('a'), store.get('b')]).toEqual([true, undefined])
    await planMode.dispose()
    for (const log of logs) await log.close()
  })
})
