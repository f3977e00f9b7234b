import { fork, type ChildProcess } from 'node:child_process'
import { mkdir, mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { openJsonlSessionLog } from '../src/node.js'
import { buildForChild } from './fixtures/build.js'

const here = dirname(fileURLToPath(import.meta.url))
const CHILD = join(here, 'fixtures/durable-review-child.mjs')
const PLAN = '# Migrate the database\n\n1. Back up.\n2. Migrate.'
// docs/spec.md R81.
const APPROVED_NEWS = 'The user approved your plan and plan mode is off; carry out the plan, starting now.'
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

let buildDir: string
let dir: string
let indexUrl: string
let nodeUrl: string
const children = new Set<ChildProcess>()

beforeAll(async () => {
  // Inside the repository, so that the children resolve xstate from node_modules.
  await mkdir(join(here, 'artifacts'), { recursive: true })
  buildDir = await mkdtemp(join(here, 'artifacts', 'child-build-'))
  ;[indexUrl, nodeUrl] = (await buildForChild(buildDir, ['index.ts', 'node.ts'])) as [string, string]
  dir = await mkdtemp(join(tmpdir(), 'plan-mode-durable-review-'))
})

afterEach(() => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
  children.clear()
})

afterAll(async () => {
  await rm(buildDir, { recursive: true, force: true })
  await rm(dir, { recursive: true, force: true })
})

/** Runs one host process to its end; resolves with its report once it exited cleanly. */
function runProcess(logPath: string, role: 'open' | 'answer' | 'carry'): Promise<Record<string, unknown>> {
  const child = fork(CHILD, [indexUrl, nodeUrl, logPath, role], { stdio: ['ignore', 'ignore', 'inherit', 'ipc'] })
  children.add(child)
  return new Promise((resolve, reject) => {
    let report: Record<string, unknown> | undefined
    child.once('message', (message) => (report = message as Record<string, unknown>))
    child.once('error', reject)
    child.once('exit', (code, signal) => {
      if (code === 0 && report !== undefined) resolve(report)
      else reject(new Error(`the ${role} process exited with ${code ?? signal} (report: ${JSON.stringify(report)})`))
    })
  })
}

describe('durable reviews across processes', () => {
  it('R79, R80, R81: a review opened in one process, answered in another, is carried out by a third', async () => {
    const logPath = join(dir, 'session.jsonl')

    // Process 1: the agent's request; its exit call is submitted and the process ends.
    const opened = await runProcess(logPath, 'open')
    expect(opened).toEqual({
      selected: 'committed',
      section: 'PLAN',
      result: { submitted: true, reviewId: expect.stringMatching(UUID) },
      open: expect.objectContaining({ callId: 'call-1' }),
    })
    const { reviewId } = opened.result as { reviewId: string }

    // Process 2: a UI sees the open review in the log and approves it.
    const answered = await runProcess(logPath, 'answer')
    expect(answered).toEqual({
      open: { reviewId, title: 'Migrate the database', plan: PLAN, version: 1, seq: 4, callId: 'call-1' },
      outcome: 'approved',
      state: { active: true, pending: false },
      after: null,
    })

    // Process 3: the agent's next turn; its first boundary leaves plan mode and tells the approval.
    const carried = await runProcess(logPath, 'carry')
    expect(carried).toEqual({
      before: { active: true, pending: false },
      section: '',
      messages: [
        {
          id: expect.any(String),
          role: 'user',
          content: [{ type: 'text', text: APPROVED_NEWS }],
          source: { kind: 'plugin', plugin: 'plan-mode', form: 'notice', summary: APPROVED_NEWS },
        },
      ],
      texts: [APPROVED_NEWS],
      next: [],
      state: { active: false },
    })

    // The log, read back: every process's lock was released.
    const log = await openJsonlSessionLog(logPath)
    try {
      expect(log.events.map((e) => [e.seq, e.type, e.data])).toEqual([
        [1, 'plan/mode', { active: true }],
        [2, 'turn/start', {}],
        [3, 'request/header', { step: 0 }],
        [4, 'plan/review', { outcome: 'requested', reviewId, title: 'Migrate the database', plan: PLAN, callId: 'call-1' }],
        [5, 'turn/end', {}],
        [6, 'plan/review', { outcome: 'approved', reviewId, title: 'Migrate the database', plan: PLAN }],
        [7, 'turn/start', {}],
        [8, 'plan/mode', { active: false }],
        [9, 'request/header', { step: 0 }],
        [10, 'request/header', { step: 1 }],
        [11, 'turn/end', {}],
      ])
    } finally {
      await log.close()
    }
  })
})
