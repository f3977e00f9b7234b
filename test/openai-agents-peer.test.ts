/**
 * R170: `@openai/agents-core` is an optional peer. The package is built (`tsup --out-dir`, the
 * build `npm pack` runs) into a project that has only its dependencies (xstate, diff): importing
 * the OpenAI Agents entry points there, as ESM and as CommonJS, fails with one line naming the
 * package to install. With the SDK added, both builds load it (the ESM one with a top-level
 * `import()`, the CommonJS one with `require`) and run plan mode through it. Everything is
 * written under one temp dir, removed afterwards.
 */
import { execFile } from 'node:child_process'
import { cp, mkdir, mkdtemp, rm, symlink } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

const run = promisify(execFile)
const ROOT = fileURLToPath(new URL('..', import.meta.url))
/** The child's environment: no `npm_*` variables of an outer `npm test`. */
const ENV = Object.fromEntries(Object.entries(process.env).filter(([key]) => !/^npm_/i.test(key)))
const MISSING = 'MODULE_NOT_FOUND xstate-plan-mode/openai-agents needs the `@openai/agents-core` package (npm install @openai/agents-core@0.14)'

let temp: string
let bare: string
let withSdk: string

/** A project whose node_modules hold the built package, its dependencies and `extra` (links into this checkout's node_modules). */
async function project(name: string, dist: string, extra: string[]): Promise<string> {
  const dir = join(temp, name)
  const installed = join(dir, 'node_modules', 'xstate-plan-mode')
  await mkdir(installed, { recursive: true })
  await cp(join(ROOT, 'package.json'), join(installed, 'package.json'))
  await cp(dist, join(installed, 'dist'), { recursive: true })
  for (const dependency of ['xstate', 'diff', ...extra]) {
    await mkdir(join(dir, 'node_modules', dependency, '..'), { recursive: true })
    await symlink(join(ROOT, 'node_modules', dependency), join(dir, 'node_modules', dependency), 'dir')
  }
  return dir
}

const node = (cwd: string, args: string[]) => run('node', args, { cwd, env: ENV })

beforeAll(async () => {
  temp = await mkdtemp(join(tmpdir(), 'plan-mode-openai-peer-'))
  const dist = join(temp, 'dist')
  // The build, at a lower priority: tests beside it keep their CPU.
  await run('nice', ['-n', '10', join(ROOT, 'node_modules', '.bin', 'tsup'), '--out-dir', dist], { cwd: ROOT, env: ENV, maxBuffer: 1 << 24 })
  bare = await project('bare', dist, [])
  withSdk = await project('with-sdk', dist, ['@openai/agents-core'])
}, 600_000)

afterAll(async () => {
  if (temp !== undefined) await rm(temp, { recursive: true, force: true })
})

describe('R170: @openai/agents-core is an optional peer of the OpenAI Agents entry points', () => {
  const attempt = (entry: string) => ({
    esm: `import(${JSON.stringify(entry)}).then(() => console.log('imported'), (error) => console.log(error.code + ' ' + error.message))`,
    cjs: `try { require(${JSON.stringify(entry)}); console.log('imported') } catch (error) { console.log(error.code + ' ' + error.message) }`,
  })

  it('R170: without it, importing xstate-plan-mode/openai-agents names the package to install, in one line (import and require); the main entry imports', async () => {
    const { esm, cjs } = attempt('xstate-plan-mode/openai-agents')
    expect((await node(bare, ['--input-type=module', '-e', esm])).stdout).toBe(`${MISSING}\n`)
    expect((await node(bare, ['-e', cjs])).stdout).toBe(`${MISSING}\n`)
    expect((await node(bare, ['--input-type=module', '-e', `import('xstate-plan-mode').then((m) => console.log(typeof m.createPlanMode))`])).stdout).toBe('function\n')
  })

  it('R170: without it, importing xstate-plan-mode/testing/openai-agents names the package to install (import and require)', async () => {
    const { esm, cjs } = attempt('xstate-plan-mode/testing/openai-agents')
    expect((await node(bare, ['--input-type=module', '-e', esm])).stdout).toBe(`${MISSING}\n`)
    expect((await node(bare, ['-e', cjs])).stdout).toBe(`${MISSING}\n`)
  })

  it('R170: with it, both builds load the host\'s copy and run a model call through the adapter (the section after the instructions)', async () => {
    const script = (load: string) => `
${load}
const planMode = createPlanMode({ section: 'PLAN SECTION', review: 'durable' })
const agent = { id: 'a', session: createMemorySessionLog() }
const plan = withPlanMode({ planMode, agent })
const seen = []
const model = {
  async getResponse(request) {
    seen.push(request.systemInstructions)
    return { usage: new Usage(), output: [{ type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'ok' }] }] }
  },
  async *getStreamedResponse() { throw new Error('not streamed') },
}
setTracingDisabled(true)
const coder = new Agent({ name: 'coder', instructions: 'BASE', model, tools: plan.tools })
planMode.set(agent, true)
  .then(() => plan.runTurn(() => run(coder, 'Hi.', { callModelInputFilter: plan.callModelInputFilter })))
  .then((result) => console.log(JSON.stringify([result.finalOutput, seen, plan.tools.map((tool) => tool.name)])))
`
    const expected = `${JSON.stringify(['ok', ['BASE\n\nPLAN SECTION'], ['exit_plan_mode']])}\n`
    const esm = script(
      `import { Agent, Usage, run, setTracingDisabled } from '@openai/agents-core'\nimport { createMemorySessionLog, createPlanMode } from 'xstate-plan-mode'\nimport { withPlanMode } from 'xstate-plan-mode/openai-agents'`,
    )
    expect((await node(withSdk, ['--input-type=module', '-e', esm])).stdout).toBe(expected)
    const cjs = script(
      `const { Agent, Usage, run, setTracingDisabled } = require('@openai/agents-core')\nconst { createMemorySessionLog, createPlanMode } = require('xstate-plan-mode')\nconst { withPlanMode } = require('xstate-plan-mode/openai-agents')`,
    )
    expect((await node(withSdk, ['-e', cjs])).stdout).toBe(expected)
  })
})
