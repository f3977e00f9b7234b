import { mkdtemp, mkdir, readFile, readdir, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { dirname, join, relative, resolve, sep } from 'node:path'
import { fileURLToPath } from 'node:url'
import ts from 'typescript'
import { afterAll, describe, expect, it } from 'vitest'

/**
 * Apps on their own floors (issue #25): every app under `apps/` (`cli`, `web`, `visualizer`)
 * stands on the package's public entry points like any user's app, plus the one shared app folder
 * `apps/shared`; no app imports another app, and `apps/shared` imports no app. Checked over every
 * import of every source file under `apps/` (static, dynamic, `export … from`, `require`, and the
 * module hooks a file `register`s), as TypeScript's own pre-processor reads them.
 */

const ROOT = fileURLToPath(new URL('..', import.meta.url))
/** The folder every app may import besides its own. */
const SHARED = 'shared'
const SOURCE = /\.(ts|tsx|mts|cts|js|mjs|cjs)$/
/** Build output and installed packages are not sources. */
const SKIPPED_DIRS = new Set(['node_modules', 'dist'])

/** The package's public entry points as import specifiers (package.json "exports": `.` is the name itself). */
async function publicEntryPoints(root: string): Promise<{ packageName: string; entryPoints: Set<string> }> {
  const { name, exports } = JSON.parse(await readFile(join(root, 'package.json'), 'utf8')) as { name: string; exports: Record<string, unknown> }
  return { packageName: name, entryPoints: new Set(Object.keys(exports).map((key) => (key === '.' ? name : `${name}/${key.slice(2)}`))) }
}

/** Every source file under `dir`, recursively. */
async function sourceFiles(dir: string): Promise<string[]> {
  const files: string[] = []
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) {
      if (!SKIPPED_DIRS.has(entry.name) && !/^dist\./.test(entry.name)) files.push(...(await sourceFiles(path)))
    } else if (SOURCE.test(entry.name) && !entry.name.endsWith('.d.ts') && !entry.name.endsWith('.d.mts')) {
      files.push(path)
    }
  }
  return files
}

/** What a file imports: module specifiers, and the hooks it registers (`register('./x.mjs', import.meta.url)`). */
function importsOf(source: string): string[] {
  const modules = ts.preProcessFile(source, true, true).importedFiles.map((file) => file.fileName)
  const hooks = [...source.matchAll(/\bregister\(\s*(['"])([^'"]+)\1\s*,\s*import\.meta\.url/g)].map((match) => match[2]!)
  return [...modules, ...hooks]
}

/** `root`-relative path with `/` separators. */
const shown = (root: string, path: string) => relative(root, path).split(sep).join('/')

/**
 * Every import under `<root>/apps` that breaks the floors, as `<file>: imports '<specifier>' (<why>)`,
 * sorted; empty when the layout holds. The package's name and exports come from `<root>/package.json`.
 */
async function layoutViolations(root: string): Promise<string[]> {
  const apps = join(root, 'apps')
  const { packageName, entryPoints } = await publicEntryPoints(root)
  const violations: string[] = []
  for (const file of await sourceFiles(apps)) {
    const floor = shown(apps, file).split('/')[0]!
    for (const specifier of importsOf(await readFile(file, 'utf8'))) {
      const at = `${shown(root, file)}: imports '${specifier}'`
      if (specifier === packageName || specifier.startsWith(`${packageName}/`)) {
        if (!entryPoints.has(specifier)) violations.push(`${at} (not one of the package's public entry points: ${[...entryPoints].join(', ')})`)
        continue
      }
      if (!specifier.startsWith('.') && !specifier.startsWith('/') && !specifier.startsWith('file:')) continue // node: and npm packages
      const target = specifier.startsWith('file:') ? fileURLToPath(specifier) : resolve(dirname(file), specifier)
      const inApps = shown(apps, target)
      if (inApps.startsWith('..') || inApps === '') {
        const outside = shown(root, target)
        const why = outside.startsWith('src/') ? "the library's sources: import a public entry point" : 'outside apps/'
        violations.push(`${at} (${why})`)
        continue
      }
      const targetFloor = inApps.split('/')[0]!
      if (targetFloor === floor) continue
      if (floor === SHARED) violations.push(`${at} (apps/shared imports no app: apps/${targetFloor})`)
      else if (targetFloor !== SHARED) violations.push(`${at} (an app imports no other app: apps/${targetFloor})`)
    }
  }
  return violations.sort()
}

describe('apps on their own floors (#25)', () => {
  const temps: string[] = []
  afterAll(async () => {
    for (const temp of temps) await rm(temp, { recursive: true, force: true })
  })

  it('the apps are apps/cli, apps/web and apps/visualizer, beside the one shared folder apps/shared', async () => {
    const floors = (await readdir(join(ROOT, 'apps'), { withFileTypes: true })).filter((entry) => entry.isDirectory()).map((entry) => entry.name)
    expect(floors.sort()).toEqual(['cli', 'shared', 'visualizer', 'web'])
  })

  it('no app imports another app, apps/shared imports no app, and the library comes only through its public entry points', async () => {
    expect(await layoutViolations(ROOT)).toEqual([])
  })

  it('every import the check reads is seen: the apps import the package by name (checks that the walk is not empty)', async () => {
    const files = await sourceFiles(join(ROOT, 'apps'))
    const specifiers = new Set((await Promise.all(files.map(async (file) => importsOf(await readFile(file, 'utf8'))))).flat())
    expect(files.map((file) => shown(ROOT, file))).toEqual(expect.arrayContaining(['apps/cli/bin.ts', 'apps/web/server.ts', 'apps/web/page/Chart.tsx', 'apps/visualizer/cli.mjs', 'apps/shared/visualizer/server.ts']))
    for (const name of ['xstate-plan-mode', 'xstate-plan-mode/ai-sdk', 'xstate-plan-mode/postgres', 'xstate-plan-mode/inspect', '../shared/chat-model.js', '../shared/ts-loader.mjs']) {
      expect(specifiers).toContain(name)
    }
  })

  it('a broken floor is named by its file and its import', async () => {
    const root = await mkdtemp(join(tmpdir(), 'plan-mode-layout-'))
    temps.push(root)
    const files: Record<string, string> = {
      'package.json': JSON.stringify({ name: 'xstate-plan-mode', exports: { '.': './dist/index.js', './ai-sdk': './dist/ai-sdk.js', './package.json': './package.json' } }),
      'src/timeouts.ts': 'export const MAX_TIMEOUT_MS = 1\n',
      'apps/cli/chat.ts': [
        "import { withPlanMode } from 'xstate-plan-mode/ai-sdk'",
        "import { lineQuote } from '../visualizer/model.js'",
        "import { countLines } from '../shared/tools.js'",
        "export const later = () => import('../web/server.js')",
        "const pkg = require('xstate-plan-mode/package.json')",
      ].join('\n'),
      'apps/web/server.ts': [
        "import { waitAtMost } from '../../src/timeouts.js'",
        "import type { Fold } from 'xstate-plan-mode/log'",
        "export { offlineChatModel } from '../cli/offline-model.js'",
        "import { createServer } from 'node:http'",
      ].join('\n'),
      'apps/web/page/Chart.tsx': "import { drawChart } from '../../shared/visualizer/chart.js'\nimport './style.css'\n",
      'apps/shared/tools.ts': "import { CliError } from '../cli/io.js'\nimport { createPlanMode } from 'xstate-plan-mode'\n",
      'apps/visualizer/cli.mjs': "register('../cli/loader.mjs', import.meta.url)\nregister('../shared/loader.mjs', import.meta.url)\n",
      'apps/visualizer/dist/bundle.js': "import '../../cli/anything.js'\n",
    }
    for (const [path, text] of Object.entries(files)) {
      await mkdir(dirname(join(root, path)), { recursive: true })
      await writeFile(join(root, path), text)
    }
    expect(await layoutViolations(root)).toEqual([
      "apps/cli/chat.ts: imports '../visualizer/model.js' (an app imports no other app: apps/visualizer)",
      "apps/cli/chat.ts: imports '../web/server.js' (an app imports no other app: apps/web)",
      "apps/shared/tools.ts: imports '../cli/io.js' (apps/shared imports no app: apps/cli)",
      "apps/visualizer/cli.mjs: imports '../cli/loader.mjs' (an app imports no other app: apps/cli)",
      "apps/web/server.ts: imports '../../src/timeouts.js' (the library's sources: import a public entry point)",
      "apps/web/server.ts: imports '../cli/offline-model.js' (an app imports no other app: apps/cli)",
      "apps/web/server.ts: imports 'xstate-plan-mode/log' (not one of the package's public entry points: xstate-plan-mode, xstate-plan-mode/ai-sdk, xstate-plan-mode/package.json)",
    ])
  })
})
