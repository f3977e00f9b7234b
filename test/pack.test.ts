/**
 * The package as users get it: `npm pack` in a fresh clone (the repository's files as `git` lists
 * them, into a temp dir, with this checkout's node_modules linked: `dist/` here may be read or
 * rebuilt by other work meanwhile), which builds it (`prepack`); `npm publish --dry-run` there;
 * install the tarball into an empty project, and run the README's quick start ("Embed it in a
 * loop") there with node, as ESM (`import`) and as CommonJS (`require`), then type-check it
 * against the shipped declarations. The project has none of the optional peers: what needs one
 * says which (R110). Two more projects install the tarball beside the peers each example's guide
 * names (LangGraph; the OpenAI Agents SDK) and run those examples: there the peers come first, as
 * this checkout installed them (hard-linked from its node_modules, the tree npm would make), and npm
 * adds the tarball to them, checking them against its peer ranges.
 *
 * Once the tarball is packed, the steps that wait on npm and the disk run at once: the publish
 * dry run, the three installs, and the type check (once its project is installed); each test awaits
 * the step it reads.
 *
 * It needs no network when the npm cache holds the dependencies (as after `npm ci`): npm is run
 * with `--prefer-offline`. Everything it writes is under one temp dir, removed afterwards.
 */
import { execFile } from 'node:child_process'
import { copyFileSync, existsSync, linkSync, mkdirSync, readdirSync, readFileSync, readlinkSync, symlinkSync } from 'node:fs'
import { access, cp, mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { dirname, join, relative, sep } from 'node:path'
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
 * Runs a CPU-heavy tool (the build, tsc, npm's installs and publish dry run, several at once) at a
 * lower priority where `nice` exists, so that the timing-sensitive tests running beside it in
 * `npm test` (the browser ones) keep their CPU.
 */
const heavy = (file: string, args: string[], options: { cwd: string }) =>
  process.platform === 'win32'
    ? run(file, args, { ...options, env: ENV, maxBuffer: 1 << 24 })
    : run('nice', ['-n', '10', file, ...args], { ...options, env: ENV, maxBuffer: 1 << 24 })

let temp: string
let app: string
const timings: Record<string, number> = {}

/**
 * CPU time (user + system, ms) of the child processes this process has waited for, theirs
 * included, where Linux tells it (`/proc/self/stat`'s cutime and cstime, in ticks of 1/100 s);
 * else undefined.
 */
async function childrenCpu(): Promise<number | undefined> {
  try {
    const stat = await readFile('/proc/self/stat', 'utf8')
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ') // from field 3 on
    const ticks = Number(fields[13]) + Number(fields[14])
    return Number.isFinite(ticks) ? ticks * 10 : undefined
  } catch {
    return undefined
  }
}
/** CPU time at the start: the children's, this process's. */
let cpuAtStart: [number | undefined, NodeJS.CpuUsage]

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

/**
 * Work started now and awaited later, by the test that reads it: its failure is that test's (and
 * `afterAll` waits for it), not an unhandled rejection meanwhile.
 */
function started<T>(work: Promise<T>): Promise<T> {
  work.catch(() => {})
  pending.push(work)
  return work
}
const pending: Promise<unknown>[] = []

/**
 * `npm install <tarball>` in a new project `<temp>/<name>` ("type": "module"), as a user does. `beside`
 * names packages the project already depends on when the tarball comes, at this checkout's versions
 * (its package.json lists them; {@link linkInstalled} puts them and what they need in its
 * node_modules): npm checks them against the package's peer ranges (a conflict fails the install) and
 * adds the package and its dependencies among them.
 */
async function install(name: string, beside: string[] = []): Promise<string> {
  const project = join(temp, name)
  await mkdir(project)
  const dependencies = Object.fromEntries(beside.map((peer) => [peer, manifestOf(join(ROOT, 'node_modules', peer)).version]))
  await writeFile(join(project, 'package.json'), JSON.stringify({ name, version: '1.0.0', private: true, type: 'module', dependencies }))
  if (beside.length > 0) await timed(`link ${name}`, async () => linkInstalled(project, beside))
  await timed(`install ${name}`, () =>
    heavy('npm', ['install', tarball, '--prefer-offline', '--no-audit', '--no-fund', '--ignore-scripts'], { cwd: project }),
  )
  return project
}

type Manifest = {
  version: string
  dependencies?: Record<string, string>
  optionalDependencies?: Record<string, string>
  peerDependencies?: Record<string, string>
  peerDependenciesMeta?: Record<string, { optional?: boolean }>
}
const manifestOf = (dir: string) => JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as Manifest

/**
 * Puts the packages `names`, as this checkout's node_modules/ has them, into `<project>/node_modules`
 * with all they need: what npm would install for them (their dependencies, optional dependencies and
 * peers not marked optional, found as Node finds them, at the same place relative to node_modules/),
 * hard-linked (copied where the temp dir is on another file system). The result is the tree
 * `npm install <names>` makes in an empty project, without extracting their ~5,700 and ~7,400 files
 * from npm's cache (compared once: the same packages at the same versions and places, 25 with
 * LangGraph and 103 with the OpenAI Agents SDK, beside the package). The npm install that follows
 * would add a package missing here and remove one not needed (tried), and replaces a package rather
 * than write into its files, so the checkout's copies stay as they are. Synchronous: half the CPU
 * time of the same calls awaited (~0.1 s per 2,700 files), and nothing else in this process waits.
 */
function linkInstalled(project: string, names: string[]): void {
  const modules = join(ROOT, 'node_modules')
  /** Where Node's lookup from the package in `from` finds `name`, under node_modules/; else undefined. */
  const find = (from: string, name: string) => {
    for (let dir = from; ; dir = dirname(dir)) {
      const candidate = join(dir.endsWith(`${sep}node_modules`) ? dir : join(dir, 'node_modules'), name)
      if (existsSync(join(candidate, 'package.json'))) return candidate
      if (dir === modules) return undefined
    }
  }
  const needed = new Set<string>()
  const add = (dir: string) => {
    if (needed.has(dir)) return
    needed.add(dir)
    const manifest = manifestOf(dir)
    const optionalPeers = Object.entries(manifest.peerDependenciesMeta ?? {}).filter(([, meta]) => meta.optional).map(([name]) => name)
    for (const name of new Set([
      ...Object.keys(manifest.dependencies ?? {}),
      ...Object.keys(manifest.optionalDependencies ?? {}),
      ...Object.keys(manifest.peerDependencies ?? {}).filter((name) => !optionalPeers.includes(name)),
    ])) {
      const found = find(dir, name)
      if (found) add(found)
    }
  }
  for (const name of names) add(join(modules, name))
  // A package's own node_modules/ holds what it needs, each added above as a package of its own.
  const mirror = (from: string, to: string) => {
    mkdirSync(to, { recursive: true })
    for (const entry of readdirSync(from, { withFileTypes: true })) {
      const [source, target] = [join(from, entry.name), join(to, entry.name)]
      if (entry.name === 'node_modules') continue
      if (entry.isDirectory()) mirror(source, target)
      else if (entry.isSymbolicLink()) symlinkSync(readlinkSync(source), target)
      else {
        try {
          linkSync(source, target)
        } catch {
          copyFileSync(source, target)
        }
      }
    }
  }
  for (const dir of needed) mirror(dir, join(project, 'node_modules', relative(modules, dir)))
}

/**
 * `node -e` in `cwd` running `script(load)` once for each build of the package, in one process: first
 * the ESM build (`load(specifier)`, `specifier` a JavaScript expression, is an `import()` of it), then
 * the CommonJS one (a `require`, whose throw becomes a rejection), each after a line naming it
 * (`import`, `require`). `script(load)` is an expression whose promise settles once it has printed.
 * The two builds are separate files that share no module, so one process checks both: a Node start
 * (~0.15 s of CPU) less per check.
 */
function inBothBuilds(cwd: string, script: (load: (specifier: string) => string) => string) {
  const builds: [string, (specifier: string) => string][] = [
    ['import', (specifier) => `import(${specifier})`],
    ['require', (specifier) => `Promise.resolve().then(() => require(${specifier}))`],
  ]
  const body = builds.map(([name, load]) => `  console.log('${name}')\n  await ${script(load)}\n`).join('')
  return run('node', ['-e', `(async () => {\n${body}})().catch((error) => { console.error(error); process.exitCode = 1 })\n`], { cwd, env: ENV })
}

/** TypeScript compiled as a user's build would (ESM). */
const toEsm = (source: string) => ts.transpileModule(source, { compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 } }).outputText

beforeAll(async () => {
  cpuAtStart = [await childrenCpu(), process.cpuUsage()]
  temp = await mkdtemp(join(tmpdir(), 'plan-mode-pack-'))

  // 1. A fresh clone: what git tracks (and new files it would), as they are in this checkout; no dist/.
  const clone = join(temp, 'clone')
  const listed = await run('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], { cwd: ROOT, env: ENV, maxBuffer: 1 << 24 })
  await timed('clone', async () => {
    const files = listed.stdout.split('\0').filter(Boolean)
    for (const dir of new Set(files.map((file) => dirname(join(clone, file))))) await mkdir(dir, { recursive: true })
    await Promise.all(
      files.map((file) =>
        // A file deleted, not yet committed, is not copied.
        cp(join(ROOT, file), join(clone, file)).catch((error: NodeJS.ErrnoException) => {
          if (error.code !== 'ENOENT') throw error
        }),
      ),
    )
  })
  await symlink(join(ROOT, 'node_modules'), join(clone, 'node_modules'), 'dir')

  // 2. Pack it as a maintainer does: `prepack` builds dist/ first. The tarball npm would publish.
  const packed = await timed('pack (with its build)', () => heavy('npm', ['pack', '--json', '--pack-destination', temp], { cwd: clone }))
  // The build's own output comes first; npm's JSON answer is last.
  const [{ filename, files }] = JSON.parse(packed.stdout.slice(packed.stdout.lastIndexOf('\n[\n') + 1)) as [{ filename: string; files: { path: string }[] }]
  packedFiles = files.map((file) => file.path)
  tarball = join(temp, filename)

  // 3. At once: the publish dry run; the tarball installed into an empty project, as a user does,
  // then type-checked there (awaited by its test); and into a second project beside the optional
  // peers the examples need (awaited by theirs).
  const publish = started(timed('publish --dry-run', () => heavy('npm', ['publish', '--dry-run', '--ignore-scripts'], { cwd: clone })))
  // Each example in a project of its own, with only the peers its guide's install line names, so that
  // neither passes on a dependency the other stack happens to bring.
  withLangGraph = started(
    (async () => {
      // LangGraph as this checkout tests it.
      const project = await install('app-langgraph', ['@langchain/langgraph', '@langchain/core'])
      // The example, its host's process and the section it imports.
      for (const name of ['langgraph-agent', 'langgraph-process', 'plan-section']) {
        await writeFile(join(project, `${name}.js`), toEsm(await readFile(join(ROOT, 'examples', `${name}.ts`), 'utf8')))
      }
      return project
    })(),
  )
  withOpenAiAgents = started(
    (async () => {
      // The OpenAI Agents SDK as docs/openai-agents.md's install line names it (0.14; this checkout's 0.14.3).
      const project = await install('app-openai-agents', ['@openai/agents-core'])
      await writeFile(join(project, 'agent.mjs'), toEsm(await readFile(join(ROOT, 'examples', 'openai-agents-agent.ts'), 'utf8')))
      return project
    })(),
  )
  app = await install('app')
  typeChecked = started(typeCheck(app))

  // 4. The README's quick start, as users would compile it: ESM and CommonJS.
  const quickStart = readmeBlock(await readFile(join(ROOT, 'README.md'), 'utf8'), '## Embed it in a loop')
  const transpile = (module: ts.ModuleKind) =>
    ts.transpileModule(quickStart, { compilerOptions: { module, target: ts.ScriptTarget.ES2022 } }).outputText
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

  publishWarnings = (await publish).stderr
    .split('\n')
    .filter((line) => line.startsWith('npm warn'))
    // This machine is logged in to no registry: npm says so, as it does for any package.
    .filter((line) => !line.includes('This command requires you to be logged in'))
}, 600_000) // a hang guard, not a time limit: the build is slow on a busy machine

/**
 * `tsc` in the installed project: the quick start, a conformance driver type, a mutable JSON Schema
 * and the inspect entry against the shipped declarations, strict, the libraries' declarations
 * checked (TypeScript's own lib files, not the package's, are not). Resolves with tsc's output.
 */
async function typeCheck(project: string): Promise<{ stdout: string }> {
  await writeFile(join(project, 'quickstart.ts'), readmeBlock(await readFile(join(ROOT, 'README.md'), 'utf8'), '## Embed it in a loop'))
  await writeFile(join(project, 'model.ts'), await readFile(join(ROOT, 'examples', 'model.ts'), 'utf8'))
  await writeFile(
    join(project, 'types.ts'),
    [
      `import { createPlanMode } from 'xstate-plan-mode'`,
      `import type { ConformanceAgent, ConformanceStep } from 'xstate-plan-mode/testing'`,
      `import { createPlanModeInspector, type PlanModeInspector } from 'xstate-plan-mode/inspect'`,
      `export const inspect: (url: string) => PlanModeInspector = (url) => createPlanModeInspector({ url })`,
      `type ObjectSchema = { type: 'object'; properties: Record<string, unknown>; required: string[]; additionalProperties: boolean }`,
      `export const parameters: ObjectSchema = createPlanMode({ section: 'Plan.' }).exitTool.parameters`,
      `export type Step = ConformanceAgent['step'] extends (options?: { signal?: AbortSignal }) => Promise<ConformanceStep> ? true : never`,
      '',
    ].join('\n'),
  )
  await writeFile(
    join(project, 'tsconfig.json'),
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
        skipDefaultLibCheck: true,
      },
      files: ['quickstart.ts', 'model.ts', 'types.ts'],
    }),
  )
  return timed('tsc', () => heavy(join(BIN, 'tsc'), ['-p', join(project, 'tsconfig.json')], { cwd: project }).catch((error: { stdout: string }) => error))
}

let packedFiles: string[] = []
/** The packed tarball's path. */
let tarball = ''
let publishWarnings: string[] = []
/** The project with the tarball and LangGraph, once installed. */
let withLangGraph: Promise<string>
/** The project with the tarball and the OpenAI Agents SDK, once installed. */
let withOpenAiAgents: Promise<string>
/** tsc's answer in the project without peers. */
let typeChecked: Promise<{ stdout: string }>

afterAll(async () => {
  await Promise.allSettled(pending)
  if (temp) await rm(temp, { recursive: true, force: true })
  // Wall time of each step (the steps after the pack overlap), and the CPU time the file cost.
  console.log(`pack test timings (ms): ${JSON.stringify(timings)}`)
  if (cpuAtStart) {
    const [children, own] = [await childrenCpu(), process.cpuUsage(cpuAtStart[1])]
    const cpu = { 'child processes': children === undefined || cpuAtStart[0] === undefined ? 'unknown' : children - cpuAtStart[0], 'this process': Math.round((own.user + own.system) / 1000) }
    console.log(`pack test CPU (ms): ${JSON.stringify(cpu)}`)
  }
})

describe('the npm tarball', () => {
  it('ships the builds, their declarations, the README and the spec, and no sources', () => {
    for (const file of ['package.json', 'README.md', 'docs/spec.md', 'dist/cli.js']) expect(packedFiles).toContain(file)
    expect(packedFiles).toContain('dist/elk.cjs')
    for (const entry of ['index', 'node', 'ai-sdk', 'openai-agents', 'inspect', 'testing', 'testing-scenarios', 'testing-node', 'testing-ai-sdk', 'testing-openai-agents', 'testing-langgraph', 'postgres', 'guard', 'langgraph']) {
      for (const ext of ['js', 'cjs', 'd.ts', 'd.cts']) expect(packedFiles).toContain(`dist/${entry}.${ext}`)
    }
    expect(packedFiles.filter((file) => !file.startsWith('dist/') && !['package.json', 'README.md', 'docs/spec.md'].includes(file))).toEqual([])
  })

  it('ships no source maps, and no bundle points at one: a stack trace stays in the files the package holds (issue #26)', async () => {
    expect(packedFiles.filter((file) => file.endsWith('.map'))).toEqual([])
    const pointing: string[] = []
    for (const file of packedFiles.filter((file) => /\.(c?js|d\.c?ts)$/.test(file))) {
      if ((await readFile(join(app, 'node_modules', 'xstate-plan-mode', file), 'utf8')).includes('sourceMappingURL')) pointing.push(file)
    }
    expect(pointing).toEqual([])
  })

  it('R110: npm pack in a fresh clone builds first (prepack), and npm publish --dry-run warns of nothing', () => {
    expect(packedFiles).toContain('dist/index.js')
    expect(publishWarnings).toEqual([])
  })

  it('R110: installed, it brings xstate and diff, and none of its optional peers (@statelyai/inspect, ws, ai)', async () => {
    const installed = JSON.parse(await readFile(join(app, 'node_modules', 'xstate-plan-mode', 'package.json'), 'utf8')) as {
      dependencies: Record<string, string>
    }
    expect(Object.keys(installed.dependencies).sort()).toEqual(['diff', 'xstate'])
    for (const name of ['@statelyai/inspect', 'ws', 'ai', 'typescript']) {
      expect(await access(join(app, 'node_modules', name)).then(() => 'installed', () => 'absent')).toBe('absent')
    }
  })

  it('R110: without @statelyai/inspect and ws, the inspect entry imports, and what needs them names the package to install (import and require)', async () => {
    const attempts = (load: string) =>
      `${load}.then(({ createPlanModeInspector, createWebSocketTransport }) => {\n` +
      `  for (const make of [() => createPlanModeInspector({ send() {} }), () => createWebSocketTransport('ws://127.0.0.1:9')]) {\n` +
      `    try { make(); console.log('made') } catch (error) { console.log(error.code + ' ' + error.message) }\n` +
      `  }\n})\n`
    const expected = [
      'MODULE_NOT_FOUND xstate-plan-mode/inspect needs the `@statelyai/inspect` package (npm install @statelyai/inspect@0.7)',
      'MODULE_NOT_FOUND xstate-plan-mode/inspect needs the `ws` package (npm install ws@8)',
      '',
    ].join('\n')
    const { stdout, stderr } = await inBothBuilds(app, (load) => attempts(load(`'xstate-plan-mode/inspect'`)))
    expect({ stdout, stderr }).toEqual({ stdout: `import\n${expected}require\n${expected}`, stderr: '' })
  })

  it('R148: without @langchain/langgraph, the langgraph entry imports, and createLangGraphPlanMode names the package to install (import and require)', async () => {
    const attempt = (load: string) =>
      `${load}.then(({ createLangGraphPlanMode }) => createLangGraphPlanMode({ planMode: {} }))\n` +
      `  .then(() => console.log('made'), (error) => console.log(error.code + ' ' + error.message))\n`
    const expected = 'MODULE_NOT_FOUND xstate-plan-mode/langgraph needs the `@langchain/langgraph` package (npm install @langchain/langgraph@1)\n'
    const { stdout, stderr } = await inBothBuilds(app, (load) => attempt(load(`'xstate-plan-mode/langgraph'`)))
    expect({ stdout, stderr }).toEqual({ stdout: `import\n${expected}require\n${expected}`, stderr: '' })
  })

  it('R170, R110: without @openai/agents-core, importing the OpenAI Agents entry points names the package to install, in one line (import and require); the main entry imports', async () => {
    const missing = 'MODULE_NOT_FOUND xstate-plan-mode/openai-agents needs the `@openai/agents-core` package (npm install @openai/agents-core@0.14)\n'
    const attempt = (load: (specifier: string) => string) =>
      `Promise.all(['xstate-plan-mode/openai-agents', 'xstate-plan-mode/testing/openai-agents'].map((entry) => ${load('entry')}\n` +
      `  .then(() => 'imported', (error) => error.code + ' ' + error.message)))\n` +
      `  .then((lines) => console.log(lines.join('\\n')))\n` +
      `  .then(() => ${load("'xstate-plan-mode'")}).then((main) => console.log('main entry: ' + typeof main.createPlanMode))\n`
    const expected = `${missing}${missing}main entry: function\n`
    const { stdout, stderr } = await inBothBuilds(app, attempt)
    expect({ stdout, stderr }).toEqual({ stdout: `import\n${expected}require\n${expected}`, stderr: '' })
  })

  it('R110: the plan-mode command names the optional peer a command needs (visualize: ws, demo: ai), exit code 2', async () => {
    const planMode = join(app, 'node_modules', '.bin', 'plan-mode')
    const failed = (args: string[]) =>
      run(planMode, args, { cwd: app, env: ENV, timeout: 60_000 }).then(
        ({ stdout }) => ({ code: 0, stdout, stderr: '' }),
        (error: { code: number; stdout: string; stderr: string }) => ({ code: error.code, stdout: error.stdout, stderr: error.stderr }),
      )
    expect(await failed(['visualize', '--port', '0'])).toEqual({
      code: 2,
      stdout: '',
      stderr: 'plan-mode: visualize needs the `ws` package (npm install ws@8)\n',
    })
    expect(await failed(['demo'])).toEqual({ code: 2, stdout: '', stderr: 'plan-mode: demo needs the `ai` package (npm install ai@6)\n' })
  })

  it('R145, R146: examples/langgraph-agent.ts runs from the installed tarball in an empty project with LangGraph installed beside it: a review left waiting by one process is approved in another, and the stock driver (R152) passes the durable suite', async () => {
    // The project beside LangGraph, where the example, its host's process and the section it imports are, compiled as a user's build would (ESM: the project is "type": "module").
    const project = await withLangGraph
    // Two Node processes on one checkpoint file: the review the first leaves waiting, the second answers.
    const plan = await run('node', ['langgraph-process.js', 'plan', 'checkpoints.json'], { cwd: project, env: ENV })
    expect({ stdout: plan.stdout.split('\n'), stderr: plan.stderr }).toEqual({
      stdout: [
        'Plan mode on. Use /plan off to leave.',
        JSON.stringify('# Retry the config load\n\n1. Set retries to 3 in src/config.ts.'),
        JSON.stringify('# Retry the config load\n\n1. Set retries to 3 in src/config.ts.\n2. Log each retry.'),
        '',
      ],
      stderr: '',
    })
    const approve = await run('node', ['langgraph-process.js', 'approve', 'checkpoints.json'], { cwd: project, env: ENV })
    expect({ stdout: approve.stdout.split('\n'), stderr: approve.stderr }).toEqual({
      stdout: ['Done: retries are 3, and each one is logged.', JSON.stringify('export const retries = 3 // each retry is logged\n'), '{"active":false}', ''],
      stderr: '',
    })
    // The adapter's stock driver, from its entry, passes the durable suite there (import and require).
    const check = (load: (name: string) => string) =>
      `Promise.all([${load('xstate-plan-mode/testing/scenarios')}, ${load('xstate-plan-mode/testing/langgraph')}])` +
      `.then(([kit, lg]) => kit.checkDurableReviews(lg.conformanceSuites({ section: 'Plan first.' }).durable))` +
      `.then((report) => console.log(report.passed.length + ' passed, ' + report.skipped.length + ' skipped'))`
    const esm = await run('node', ['--input-type=module', '-e', check((name) => `import('${name}')`)], { cwd: project, env: ENV })
    expect({ stdout: esm.stdout, stderr: esm.stderr }).toEqual({ stdout: '7 passed, 0 skipped\n', stderr: '' })
    const cjs = await run('node', ['-e', check((name) => `Promise.resolve(require('${name}'))`)], { cwd: project, env: ENV })
    expect({ stdout: cjs.stdout, stderr: cjs.stderr }).toEqual({ stdout: '7 passed, 0 skipped\n', stderr: '' })
  }, 600_000) // a hang guard, not a time limit: an install on a busy machine

  it('R112: the installed plan-mode runs dist/cli.js: --version answers with no TypeScript in the project', async () => {
    const { version } = JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8')) as { version: string }
    const answer = await timed('plan-mode --version', () => run(join(app, 'node_modules', '.bin', 'plan-mode'), ['--version'], { cwd: app, env: ENV }))
    expect(answer.stdout).toBe(`${version}\n`)
    const bin = (JSON.parse(await readFile(join(app, 'node_modules', 'xstate-plan-mode', 'package.json'), 'utf8')) as { bin: Record<string, string> }).bin
    expect(bin).toEqual({ 'plan-mode': 'dist/cli.js' })
  })

  it("R56, R45, R50: the README quick start runs from the installed tarball with import (dist/index.js)", async () => {
    const { stdout } = await timed('run esm', () => run('node', ['run.mjs'], { cwd: app, env: ENV }))
    expect(stdout).toBe([`entry node_modules/xstate-plan-mode/dist/index.js`, ...EXPECTED_RUN, ''].join('\n'))
  })

  it('R56, R45, R50: the README quick start runs from the installed tarball with require (dist/index.cjs)', async () => {
    const { stdout } = await timed('run cjs', () => run('node', ['run.cjs'], { cwd: app, env: ENV }))
    expect(stdout).toBe([`entry node_modules/xstate-plan-mode/dist/index.cjs`, ...EXPECTED_RUN, ''].join('\n'))
  })

  it('R41, R110: the quick start, a conformance driver type, a mutable JSON Schema and the inspect entry type-check against the shipped declarations, with no optional peer installed', async () => {
    const result = await typeChecked
    expect(result.stdout).toBe('')
  })

  it('the scenarios and the node:test wrapper import with no test runner installed but Node’s (import and require)', async () => {
    const load = (how: string) =>
      `${how}.then((kit) => console.log(typeof kit.checkConformance, typeof kit.conformanceScenarios, typeof kit.defineConformanceSuite ?? 'none'))`
    const esm = await run('node', ['--input-type=module', '-e', `${load(`import('xstate-plan-mode/testing/scenarios')`)}; ${load(`import('xstate-plan-mode/testing/node')`)}`], { cwd: app, env: ENV })
    expect(esm.stdout.split('\n').sort()).toEqual(['', 'function function function', 'function function undefined'])
    const cjs = await run('node', ['-e', `const kit = require('xstate-plan-mode/testing/scenarios'); console.log(typeof kit.checkDurableReviews)`], { cwd: app, env: ENV })
    expect(cjs.stdout).toBe('function\n')
    expect(await access(join(app, 'node_modules', 'vitest')).then(() => 'installed', () => 'absent')).toBe('absent')
  })

  it('the testing entry ships its guide in the declarations (no dangling "see the module comment")', async () => {
    // The entry re-exports the scenarios' declarations, where the driver's guide is.
    const entry = await readFile(join(app, 'node_modules', 'xstate-plan-mode', 'dist', 'testing.d.ts'), 'utf8')
    expect(entry).toContain("from './testing-scenarios.js'")
    const dts = await readFile(join(app, 'node_modules', 'xstate-plan-mode', 'dist', 'testing-scenarios.d.ts'), 'utf8')
    expect(entry + dts).not.toContain('module comment')
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

describe('the OpenAI Agents example from the tarball', () => {
  let project: string
  beforeAll(async () => {
    // An empty project with the package and the SDK it names (docs/openai-agents.md's install line).
    project = await withOpenAiAgents
  }, 600_000) // a hang guard, not a time limit: an install on a busy machine

  /** One process of the example: its `step` with `action`, what it printed. */
  const processStep = async (action: unknown) => {
    const script = `import { step } from './agent.mjs'\nconsole.log((await step('.', ${JSON.stringify(action)})).join('\\n'))\n`
    const { stdout } = await run('node', ['--input-type=module', '-e', script], { cwd: project, env: ENV })
    return stdout.trim().split('\n')
  }

  it('R170: with @openai/agents-core installed, the CommonJS build requires the host\'s copy of the SDK (the ESM build runs the example below)', async () => {
    const script = `const sdk = require('@openai/agents-core'); const plan = require('xstate-plan-mode/openai-agents'); console.log(typeof plan.withPlanMode, typeof sdk.RunState)`
    expect((await run('node', ['-e', script], { cwd: project, env: ENV })).stdout).toBe('function function\n')
  })

  it('R155, R110: examples/openai-agents-agent.ts runs from the installed tarball: planned, revised after a restart, approved and carried out in a third process', async () => {
    expect(await processStep({ start: 'Add a CSV import.' })).toEqual(['review open: v1 "CSV import"', 'plan mode: on'])
    expect(await processStep({ revise: 'in batches of 1000' })).toEqual(['review open: v2 "CSV import"', 'plan mode: on'])
    expect(await processStep({ approve: true })).toEqual([
      'done: The importer is written.',
      'src/import.ts: export function importCsv() { /* parse, insert in batches */ }',
      'plan mode: off',
    ])
  })
})
