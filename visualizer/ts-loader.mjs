/**
 * Node module hooks that run the apps' TypeScript (`cli/`, `visualizer/`) and the library's
 * sources without a build step: `xstate-plan-mode` and its subpaths resolve to their sources in
 * `src/` (the mapping of tsconfig.json "paths" and vitest.config.ts), a `.js` import that has no
 * file falls back to its `.ts` sibling (our sources import with `.js` suffixes), and `.ts` files
 * are transpiled by `typescript` (types dropped, no type check: `tsc` does that).
 * Registered by `visualizer/register.mjs`; Node 20 cannot strip types by itself.
 */
import { readFile } from 'node:fs/promises'
import { fileURLToPath } from 'node:url'
import ts from 'typescript'

/** The package's public entry points (package.json "exports") and their sources. */
const ENTRY_POINTS = new Map(
  Object.entries({
    'xstate-plan-mode': 'index.ts',
    'xstate-plan-mode/node': 'node.ts',
    'xstate-plan-mode/ai-sdk': 'adapters/ai-sdk.ts',
    'xstate-plan-mode/inspect': 'adapters/inspect.ts',
    'xstate-plan-mode/testing': 'testing/index.ts',
    'xstate-plan-mode/postgres': 'adapters/postgres.ts',
    'xstate-plan-mode/guard': 'guard/index.ts',
  }).map(([name, source]) => [name, new URL(`../src/${source}`, import.meta.url).href]),
)

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

/** Transpiles `.ts` modules to ES modules. */
export async function load(url, context, nextLoad) {
  if (!url.startsWith('file:') || !url.endsWith('.ts')) return nextLoad(url, context)
  const fileName = fileURLToPath(url)
  const source = await readFile(fileName, 'utf8')
  const { outputText } = ts.transpileModule(source, {
    fileName,
    compilerOptions: {
      module: ts.ModuleKind.ESNext,
      target: ts.ScriptTarget.ES2022,
      inlineSourceMap: true,
    },
  })
  return { format: 'module', source: outputText, shortCircuit: true }
}
