/**
 * Node module hooks that run the visualizer's TypeScript without a build step: a `.js` import
 * that has no file falls back to its `.ts` sibling (our sources import with `.js` suffixes), and
 * `.ts` files are transpiled by `typescript` (types dropped, no type check: `tsc` does that).
 * Registered by `visualizer/register.mjs`; Node 20 cannot strip types by itself.
 */
import { readFile } from 'node:fs/promises'
import { fileURLToPath } from 'node:url'
import ts from 'typescript'

/** Resolves `./x.js` to `./x.ts` when only the TypeScript source exists. */
export async function resolve(specifier, context, nextResolve) {
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
