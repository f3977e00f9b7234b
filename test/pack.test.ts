/**
 * The package as users get it: build it (into a temp dir: `dist/` may be read or rebuilt by other
 * work meanwhile), `npm pack` it, install the tarball into an empty project, and run the README's
 * quick start ("Embed it in a loop") there with node, as ESM (`import`) and as CommonJS
 * (`require`), then type-check it against the shipped declarations.
 *
 * It needs no network when the npm cache holds the dependencies (as after `npm ci`): npm is run
 * with `--prefer-offline`. Everything it writes is under one temp dir, removed afterwards.
 */
import { execFile } from 'node:child_process'
import { cp, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import ts from 'typescript'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

const run = promisify(execFile)
const ROOT = fileURLToPath(new URL('..', import.meta.url))
const BIN = join(ROOT, 'node_modules', '.bin')

/** The child's environment: no `npm_*` variables of an outer `npm test` (its prefix, its package). */
const ENV = Object.fromEntries(Object.entries(process.env).filter(([key]) => !/^npm_/i.test(key)))

/**
 * Runs a CPU-heavy tool (the build, tsc) at a lower priority where `nice` exists, so that the
 * timing-sensitive tests running beside it in `npm test` (the browser ones) keep their CPU.
 */
const heavy = (file: string, args: string[], options: { cwd: string }) =>
  process.platform === 'win32'
    ? run(file, args, { ...options, env: ENV, maxBuffer: 1 << 24 })
    : run('nice', ['-n', '10', file, ...args], { ...options, env: ENV, maxBuffer: 1 << 24 })

let temp: string
let app: string
const timings: Record<string, number> = {}

async function timed<T>(name: string, work: () => Promise<T>): Promise<T> {
  const start = performance.now()
  try {
    return await work()
  } finally {
    timings[name] = Math.round(performance.now() - start)
  }
}

/** The first ```ts block of a README section. */
function readmeBlock(readme: string, heading: string): string {
  const section = readme.indexOf(`\n${heading}\n`)
  if (section < 0) throw new Error(`README.md has no section ${heading}`)
  const start = readme.indexOf('```ts\n', section)
  const end = readme.indexOf('\n```', start + 6)
  return readme.slice(start + 6, end + 1)
}

/** The scenario both module systems run: the readme-loop scenario, printed line by line. */
const SCENARIO = `
const print = (label, value) => console.log(label + ' ' + (typeof value === 'string' ? value : JSON.stringify(value)))
async function main() {
  const answers = [
    { answers: [{ id: 'plan-review', selected: ['Keep planning'], custom: 'Add a rollback step.' }] },
    { answers: [{ id: 'plan-review', selected: ['Approve'] }] },
  ]
  const review = { ask: async () => answers.shift() }
  const replies = [
    { text: 'Here is the plan.', toolCall: { name: 'exit_plan_mode', args: { plan: '# Migration\\n1. Migrate.' } } },
    { text: 'Revised.', toolCall: { name: 'exit_plan_mode', args: { plan: '# Migration\\n1. Migrate.\\n2. Roll back.' } } },
    { text: 'Migrating now.' },
  ]
  const model = async ({ system, messages, tools }) => {
    print('request', { system, messages, tools: tools.map((tool) => tool.name) })
    return replies.shift() ?? { text: 'done' }
  }
  const { planMode, agent, runTurn } = createAgent(model, review)
  print('/plan', await planMode.command.run({ agent, rawInput: 'draft the migration' }))
  await runTurn()
  print('state', planMode.get(agent))
  print('log', agent.session.events.map((event) => event.type).join(' '))
  await planMode.dispose()
}
main().catch((error) => { console.error(error); process.exitCode = 1 })
`

const SECTION = 'Plan mode: explore and design, then present the whole plan with exit_plan_mode.'
const EXPECTED_RUN = [
  `/plan {"kind":"success","text":"Plan mode on. Use /plan off to leave."}`,
  `request {"system":"${SECTION}","messages":["draft the migration"],"tools":["exit_plan_mode"]}`,
  `request {"system":"${SECTION}","messages":["draft the migration","Here is the plan.","The user chose to keep planning; their feedback: Add a rollback step."],"tools":["exit_plan_mode"]}`,
  `request {"system":"","messages":["draft the migration","Here is the plan.","The user chose to keep planning; their feedback: Add a rollback step.","Revised.","Plan approved — plan mode exited; carry out the plan starting with your next step."],"tools":["exit_plan_mode"]}`,
  `state {"active":false}`,
  `log plan/mode turn/start request/header plan/review request/header plan/review plan/mode request/header turn/end`,
]

beforeAll(async () => {
  temp = await mkdtemp(join(tmpdir(), 'plan-mode-pack-'))
  const pkg = join(temp, 'package')
  app = join(temp, 'app')

  // 1. Build into the staged package (tsup.config.ts honours --out-dir), with what "files" ships.
  await timed('build', () => heavy(join(BIN, 'tsup'), ['--out-dir', join(pkg, 'dist')], { cwd: ROOT }))
  await mkdir(join(pkg, 'docs'))
  await Promise.all(['package.json', 'README.md', 'docs/spec.md'].map((file) => cp(join(ROOT, file), join(pkg, file))))

  // 2. Pack it: the tarball npm would publish.
  const packed = await timed('pack', () =>
    run('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', temp], { cwd: pkg, env: ENV }),
  )
  const [{ filename, files }] = JSON.parse(packed.stdout) as [{ filename: string; files: { path: string }[] }]
  packedFiles = files.map((file) => file.path)

  // 3. Install the tarball into an empty project, as a user does.
  await mkdir(app)
  await writeFile(join(app, 'package.json'), JSON.stringify({ name: 'app', version: '1.0.0', private: true, type: 'module' }))
  await timed('install', () =>
    run('npm', ['install', join(temp, filename), '--prefer-offline', '--no-audit', '--no-fund', '--ignore-scripts'], {
      cwd: app,
      env: ENV,
    }),
  )

  // 4. The README's quick start, as users would compile it: ESM and CommonJS.
  const quickStart = readmeBlock(await readFile(join(ROOT, 'README.md'), 'utf8'), '## Embed it in a loop')
  const transpile = (module: ts.ModuleKind) =>
    ts.transpileModule(quickStart, { compilerOptions: { module, target: ts.ScriptTarget.ES2022 } }).outputText
  await writeFile(join(app, 'quickstart.ts'), quickStart)
  await writeFile(join(app, 'model.ts'), await readFile(join(ROOT, 'examples', 'model.ts'), 'utf8'))
  await writeFile(join(app, 'quickstart.mjs'), transpile(ts.ModuleKind.ESNext))
  await writeFile(join(app, 'quickstart.cjs'), transpile(ts.ModuleKind.CommonJS))
  await writeFile(
    join(app, 'run.mjs'),
    `import { createAgent } from './quickstart.mjs'\n` +
      `console.log('entry ' + import.meta.resolve('xstate-plan-mode').slice(import.meta.resolve('./').length))\n${SCENARIO}`,
  )
  await writeFile(
    join(app, 'run.cjs'),
    `const { createAgent } = require('./quickstart.cjs')\n` +
      `console.log('entry ' + require.resolve('xstate-plan-mode').slice(__dirname.length + 1))\n${SCENARIO}`,
  )
}, 120_000)

let packedFiles: string[] = []

afterAll(async () => {
  if (temp) await rm(temp, { recursive: true, force: true })
  console.log(`pack test timings (ms): ${JSON.stringify(timings)}`)
})

describe('the npm tarball', () => {
  it('ships the builds, their declarations, the README and the spec, and no sources', () => {
    for (const file of ['package.json', 'README.md', 'docs/spec.md', 'dist/cli.js']) expect(packedFiles).toContain(file)
    for (const entry of ['index', 'node', 'ai-sdk', 'inspect', 'testing', 'postgres', 'guard']) {
      for (const ext of ['js', 'cjs', 'd.ts', 'd.cts']) expect(packedFiles).toContain(`dist/${entry}.${ext}`)
    }
    expect(packedFiles.filter((file) => !file.startsWith('dist/') && !['package.json', 'README.md', 'docs/spec.md'].includes(file))).toEqual([])
  })

  it("R56, R45, R50: the README quick start runs from the installed tarball with import (dist/index.js)", async () => {
    const { stdout } = await timed('run esm', () => run('node', ['run.mjs'], { cwd: app, env: ENV }))
    expect(stdout).toBe([`entry node_modules/xstate-plan-mode/dist/index.js`, ...EXPECTED_RUN, ''].join('\n'))
  }, 30_000)

  it('R56, R45, R50: the README quick start runs from the installed tarball with require (dist/index.cjs)', async () => {
    const { stdout } = await timed('run cjs', () => run('node', ['run.cjs'], { cwd: app, env: ENV }))
    expect(stdout).toBe([`entry node_modules/xstate-plan-mode/dist/index.cjs`, ...EXPECTED_RUN, ''].join('\n'))
  }, 30_000)

  it('R41: the quick start, a conformance driver type and a mutable JSON Schema type-check against the shipped declarations', async () => {
    await writeFile(
      join(app, 'types.ts'),
      [
        `import { createPlanMode } from 'xstate-plan-mode'`,
        `import type { ConformanceAgent, ConformanceStep } from 'xstate-plan-mode/testing'`,
        `type ObjectSchema = { type: 'object'; properties: Record<string, unknown>; required: string[]; additionalProperties: boolean }`,
        `export const parameters: ObjectSchema = createPlanMode({ section: 'Plan.' }).exitTool.parameters`,
        `export type Step = ConformanceAgent['step'] extends (options?: { signal?: AbortSignal }) => Promise<ConformanceStep> ? true : never`,
        '',
      ].join('\n'),
    )
    await writeFile(
      join(app, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          module: 'nodenext',
          moduleResolution: 'nodenext',
          target: 'es2022',
          lib: ['es2022', 'dom'],
          types: [],
          strict: true,
          noEmit: true,
          skipLibCheck: false,
        },
        files: ['quickstart.ts', 'model.ts', 'types.ts'],
      }),
    )
    const result = await timed('tsc', () =>
      heavy(join(BIN, 'tsc'), ['-p', join(app, 'tsconfig.json')], { cwd: app }).catch((error: { stdout: string }) => error),
    )
    expect(result.stdout).toBe('')
  }, 60_000)

  it('the testing entry ships its guide in the declarations (no dangling "see the module comment")', async () => {
    const dts = await readFile(join(app, 'node_modules', 'xstate-plan-mode', 'dist', 'testing.d.ts'), 'utf8')
    expect(dts).not.toContain('module comment')
    for (const text of [
      'the text after `/plan`, untrimmed',
      'also called with no turn open',
      'only the ones new at this step',
      'routes each question by `request.agent.id`',
      'still pending must survive it',
    ]) {
      expect(dts).toContain(text)
    }
    expect(dts).toContain('events(): readonly {')
  })
})
