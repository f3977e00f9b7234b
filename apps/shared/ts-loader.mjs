/**
 * Node module hooks that run the apps' TypeScript (`apps/`) and the library's
 * sources without a build step: `xstate-plan-mode` and its subpaths resolve to their sources in
 * `src/` (the mapping of tsconfig.json "paths" and vitest.config.ts), a `.js` import that has no
 * file falls back to its `.ts` sibling (our sources import with `.js` suffixes), and `.ts` files
 * are transpiled by `typescript` (types dropped, no type check: `tsc` does that).
 * Registered by `apps/shared/register.mjs`; Node 20 cannot strip types by itself.
 *
 * Fast starts (R112): a transpiled file is kept in a cache directory, named by a hash of its path,
 * its source, the TypeScript version and the options, so a start whose files are all cached never
 * loads `typescript` (its load alone takes most of a second). The cache is
 * `node_modules/.cache/xstate-plan-mode-ts/`, or `PLAN_MODE_TS_CACHE` when set; a file that cannot
 * be written there is transpiled again next time, nothing fails.
 */
import { createHash } from 'node:crypto'
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { fileURLToPath, pathToFileURL } from 'node:url'

/** The package's public entry points (package.json "exports") and their sources. */
const ENTRY_POINTS = new Map(
  Object.entries({
    'xstate-plan-mode': 'index.ts',
    'xstate-plan-mode/node': 'node.ts',
    'xstate-plan-mode/ai-sdk': 'adapters/ai-sdk.ts',
    'xstate-plan-mode/openai-agents': 'adapters/openai-agents.ts',
    'xstate-plan-mode/inspect': 'adapters/inspect.ts',
    'xstate-plan-mode/testing': 'testing/index.ts',
    'xstate-plan-mode/postgres': 'adapters/postgres.ts',
    'xstate-plan-mode/guard': 'guard/index.ts',
    'xstate-plan-mode/langgraph': 'adapters/langgraph.ts',
  }).map(([name, source]) => [name, new URL(`../../src/${source}`, import.meta.url).href]),
)

const CACHE = process.env.PLAN_MODE_TS_CACHE
  ? pathToFileURL(`${process.env.PLAN_MODE_TS_CACHE}/`)
  : new URL('../../node_modules/.cache/xstate-plan-mode-ts/', import.meta.url)

/** What a transpiled file depends on besides its source: the compiler's version and its options. */
const COMPILER = readFile(createRequire(import.meta.url).resolve('typescript/package.json'), 'utf8').then(
  (text) => `typescript ${JSON.parse(text).version}; ESNext ES2022 inlineSourceMap\n`,
)

/** `typescript`, loaded on the first file the cache does not hold. */
let typescript

/** Resolves the package's entry points to `src/`, and `./x.js` to `./x.ts` when only the TypeScript source exists. */
export async function resolve(specifier, context, nextResolve) {
  const source = ENTRY_POINTS.get(specifier)
  if (source !== undefined) return { url: source, format: 'module', shortCircuit: true }
  try {
    return await nextResolve(specifier, context)
  } catch (error) {
    const relative = specifier.startsWith('.') || specifier.startsWith('/') || specifier.startsWith('file:')
    if (!relative || !specifier.endsWith('.js')) throw error
    return nextResolve(`${specifier.slice(0, -3)}.ts`, context)
  }
}

/** Transpiles `.ts` modules to ES modules, through the cache. */
export async function load(url, context, nextLoad) {
  if (!url.startsWith('file:') || !url.endsWith('.ts')) return nextLoad(url, context)
  const fileName = fileURLToPath(url)
  const source = await readFile(fileName, 'utf8')
  const key = createHash('sha256').update(await COMPILER).update(`${fileName}\n`).update(source).digest('hex')
  const cached = new URL(`${key}.js`, CACHE)
  const hit = await readFile(cached, 'utf8').catch(() => undefined)
  if (hit !== undefined) return { format: 'module', source: hit, shortCircuit: true }
  typescript ??= (await import('typescript')).default
  const { outputText } = typescript.transpileModule(source, {
    fileName,
    compilerOptions: {
      module: typescript.ModuleKind.ESNext,
      target: typescript.ScriptTarget.ES2022,
      inlineSourceMap: true,
    },
  })
  await store(cached, outputText)
  return { format: 'module', source: outputText, shortCircuit: true }
}

/** Writes a cache entry whole (a temp file renamed into place: a reader never sees half a file); a failure only costs a transpile next time. */
async function store(file, text) {
  try {
    await mkdir(new URL('.', file), { recursive: true })
    const temp = new URL(`${file.href}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`)
    await writeFile(temp, text)
    await rename(temp, file)
  } catch {
    // A read-only checkout: no cache.
  }
}

/**
 * Transpiles the `.ts` files at `paths` into the cache now, those it does not hold yet (one load
 * of `typescript` for all): a test run's global setup calls it, so that the processes the tests
 * start, several at once in a fresh clone, do not each load `typescript` and compile the same files.
 */
export async function fillCache(paths) {
  for (const path of paths) await load(pathToFileURL(path).href, {}, nextLoadUnused)
}

function nextLoadUnused(url) {
  throw new Error(`fillCache: ${url} is not a .ts file`)
}
