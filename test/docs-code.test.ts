import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'

/**
 * Every fenced block of the README and the guides (docs/*.md; docs/spec.md is the contract and
 * docs/api/ is generated, so neither is read) is either code a test runs, a command that exists, or
 * a block listed below with the reason it is not code to run. A failure names the file and line.
 */

const ROOT = new URL('../', import.meta.url)
const read = (path: string) => readFileSync(new URL(path, ROOT), 'utf8')

const DOCUMENTS = ['README.md', ...readdirSync(new URL('docs/', ROOT)).filter((name) => name.endsWith('.md') && name !== 'spec.md').map((name) => `docs/${name}`)]

/**
 * Which test runs which example. `via`: the test runs a script (a child process) that imports it.
 * `typeChecked`: nothing runs it, `tsc` checks it (the reason says why that is enough).
 */
const RUNNERS: Record<string, { test: string; via?: string; typeChecked?: string }> = {
  'examples/ai-sdk.ts': { test: 'test/readme-ai-sdk.test.ts' },
  'examples/ai-sdk-conformance.ts': { test: 'test/docs-conformance.test.ts' },
  'examples/conformance-host.ts': { test: 'test/docs-conformance.test.ts' },
  'examples/waiting-host.ts': { test: 'test/docs-conformance.test.ts' },
  'examples/durable-log.ts': { test: 'test/readme-durable.test.ts' },
  'examples/guarded-agent.ts': { test: 'test/readme-guard.test.ts' },
  'examples/hand-written-loop.ts': { test: 'test/readme-loop.test.ts' },
  'examples/langgraph-agent.ts': { test: 'test/langgraph-example.test.ts' },
  'examples/langgraph-process.ts': { test: 'test/langgraph-example.test.ts' },
  'examples/headless-ci.ts': { test: 'test/docs-guard.test.ts' },
  'examples/many-instances.ts': { test: 'test/readme-instances.test.ts', via: 'scripts/many-instances.ts' },
  'examples/model.ts': { test: 'test/readme-loop.test.ts' },
  'examples/openai-agents-agent.ts': { test: 'test/openai-agents-example.test.ts' },
  'examples/plan-command.ts': { test: 'test/readme-host.test.ts' },
  'examples/plan-section.ts': { test: 'test/readme-host.test.ts' },
  'examples/planning-model.ts': { test: 'test/docs-guard.test.ts' },
  'examples/review-comments.ts': { test: 'test/docs-reviews.test.ts' },
  'examples/serverless-review.ts': { test: 'test/readme-serverless.test.ts' },
  'examples/stateless-request.ts': { test: 'test/readme-stateless.test.ts' },
  'examples/step-hook.ts': { test: 'test/readme-step-hook.test.ts' },
  'examples/terminal-review.ts': { test: 'test/readme-review.test.ts' },
  'examples/turn-it-on.ts': { test: 'test/readme-loop.test.ts' },
  'examples/use-chat-route.ts': { test: 'test/readme-use-chat.test.ts' },
  'examples/use-chat-client.tsx': {
    test: 'test/readme-use-chat.test.ts',
    typeChecked: 'a React component: tsc checks it against @ai-sdk/react; the route it talks to is run by the test, and the web chat (web/page/, driven in Chromium) is the same client in full',
  },
  'apps/visualizer/examples/visible-plan-mode.ts': { test: 'test/visualizer.test.ts' },
  'apps/visualizer/examples/stately-inspector.ts': { test: 'test/inspect.test.ts' },
}

/** Blocks that are not code to run. `assertedBy`: the test that checks the block is what the command prints. */
const NOT_CODE: { file: string; startsWith: string; reason: string; assertedBy?: string }[] = [
  {
    file: 'docs/guard.md',
    startsWith: 'seq  type            F    pending  K    detail',
    reason: 'what `plan-mode inspect` prints for the guarded agent of examples/guarded-agent.ts',
    assertedBy: 'test/readme-guard.test.ts',
  },
  { file: 'docs/how-it-works.md', startsWith: 'src/', reason: 'the file map: a picture of the source tree, not code' },
]

/** Commands the docs tell users to type, besides `npm run <script>` (checked against package.json). */
const NPM_COMMANDS = new Set(['npm install', 'npm ci', 'npm start', 'npm test', 'npm install xstate-plan-mode'])
const SCRIPTS = Object.keys((JSON.parse(read('package.json')) as { scripts: Record<string, string> }).scripts)

interface Block {
  file: string
  line: number
  lang: string
  text: string
}

/** The fenced blocks of a markdown file (CommonMark fences of backticks or tildes). */
function fencedBlocks(file: string): { blocks: Block[]; problems: string[] } {
  const lines = read(file).split('\n')
  const blocks: Block[] = []
  const problems: string[] = []
  let open: { fence: string; line: number; lang: string; body: string[] } | undefined
  lines.forEach((line, i) => {
    const fence = /^ {0,3}(`{3,}|~{3,})\s*(.*)$/.exec(line)
    if (open === undefined) {
      if (fence) open = { fence: fence[1]!, line: i + 1, lang: fence[2]!.trim(), body: [] }
    } else if (fence && fence[1]![0] === open.fence[0] && fence[1]!.length >= open.fence.length && fence[2]!.trim() === '') {
      blocks.push({ file, line: open.line, lang: open.lang, text: open.body.join('\n') })
      open = undefined
    } else open.body.push(line)
  })
  if (open) problems.push(`${file}:${open.line}: a fence that is never closed`)
  return { blocks, problems }
}

/** Whether `source` imports `path` (as `…/path-without-extension.js'`) or reads it (its path in a string). */
function references(source: string, path: string): boolean {
  const stem = path.replace(/\.tsx?$/, '')
  return source.includes(`${stem}.js'`) || source.includes(`${path}'`) || source.includes(`${path}\``)
}

/** Why a block is not covered, or undefined when it is. */
function problem(block: Block): string | undefined {
  const where = `${block.file}:${block.line}`
  if (block.lang === '') return `${where}: a fence without a language (ts, tsx, sh, text): is it code to run?`
  if (['ts', 'tsx', 'js', 'typescript', 'javascript'].includes(block.lang)) {
    const shown = block.text.trim()
    const home = Object.keys(RUNNERS).find((path) => existsSync(new URL(path, ROOT)) && read(path).includes(shown))
    if (home === undefined) return `${where}: a ${block.lang} block that no file of examples/ holds verbatim (starts: ${JSON.stringify(shown.split('\n')[0])})`
    return undefined
  }
  if (['sh', 'bash', 'shell'].includes(block.lang)) {
    for (const [i, raw] of block.text.split('\n').entries()) {
      const line = raw.replace(/\s#.*$/, '').trim()
      if (line === '') continue
      for (const command of line.split('&&').map((part) => part.trim())) {
        const script = /^npm run ([\w:-]+)(?: -- .*)?$/.exec(command)?.[1]
        if (script !== undefined ? !SCRIPTS.includes(script) : !NPM_COMMANDS.has(command)) {
          return `${block.file}:${block.line + 1 + i}: \`${command}\` is neither an npm script of package.json nor a known npm command`
        }
      }
    }
    return undefined
  }
  const listed = NOT_CODE.find((entry) => entry.file === block.file && block.text.trimStart().startsWith(entry.startsWith))
  if (listed === undefined) return `${where}: a ${block.lang} block that is not in the NOT_CODE list (starts: ${JSON.stringify(block.text.trim().split('\n')[0])})`
  return undefined
}

const parsed = DOCUMENTS.map(fencedBlocks)
const BLOCKS = parsed.flatMap((result) => result.blocks)

describe('docs: every fenced block of the README and the guides is run, checked or listed', () => {
  it('the README is a front door: 250 lines at most (issue #24), every guide linked from it', () => {
    const readme = read('README.md')
    expect(readme.split('\n').length - 1).toBeLessThanOrEqual(250)
    const guides = DOCUMENTS.filter((path) => path.startsWith('docs/')).map((path) => path.slice('docs/'.length))
    expect(guides.filter((name) => !readme.includes(`(docs/${name}`))).toEqual([])
  })

  it('every fence is closed', () => {
    expect(parsed.flatMap((result) => result.problems)).toEqual([])
  })

  it('every ts/tsx block is an example file verbatim, every sh command exists, every other block is listed with its reason', () => {
    expect(BLOCKS.map(problem).filter((message) => message !== undefined)).toEqual([])
  })

  it('each example a block shows is imported or read by the test that runs it (through its script, for `via`)', () => {
    const missing = Object.entries(RUNNERS).flatMap(([example, { test, via }]) => {
      if (!existsSync(new URL(example, ROOT))) return [`${example}: no such file`]
      if (via !== undefined) {
        const problems: string[] = []
        if (!references(read(via), example)) problems.push(`${via} does not import ${example}`)
        if (!read(test).includes(via)) problems.push(`${test} does not run ${via}`)
        return problems
      }
      return references(read(test), example) ? [] : [`${test} neither imports nor reads ${example}`]
    })
    expect(missing).toEqual([])
  })

  it('every example of the table is shown in full by some document, and every listed block still exists', () => {
    const texts = DOCUMENTS.map(read)
    const unshown = Object.keys(RUNNERS).filter((example) => existsSync(new URL(example, ROOT)) && !texts.some((text) => text.includes(read(example).trim())))
    expect(unshown).toEqual([])
    const gone = NOT_CODE.filter((entry) => !BLOCKS.some((block) => block.file === entry.file && block.text.trimStart().startsWith(entry.startsWith)))
    expect(gone).toEqual([])
  })

  it('regression: docs/hand-written-loop.md has no stray fence (a lone line and a fence left from the move turned every block after it inside out)', () => {
    const blocks = fencedBlocks('docs/hand-written-loop.md').blocks
    expect(blocks.map((block) => block.lang)).toEqual(['ts', 'ts', 'ts', 'ts'])
    expect(blocks.map((block) => block.text.split('\n')[0])).toEqual([
      "import { PLAN_LOG_EVENTS, type PlanAgent, type PlanMode } from 'xstate-plan-mode'",
      '/** A plan-policy section: the system-prompt text plan mode sends while it is on (`createPlanMode({ section })`). */',
      "import type { Interface } from 'node:readline/promises'",
      "import { createCallTranscript, type PlanAgent, type PlanMode } from 'xstate-plan-mode'",
    ])
  })

  it('a text block that shows what a command prints is read by the test that asserts it', () => {
    const unread = NOT_CODE.filter((entry) => entry.assertedBy !== undefined && !read(entry.assertedBy).includes(`../${entry.file}`))
    expect(unread).toEqual([])
  })
})
