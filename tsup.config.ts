import { mkdtempSync, rmSync } from 'node:fs'
import { copyFile, mkdir, readdir, readFile, writeFile } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { defineConfig, type Options } from 'tsup'
import ts from 'typescript'

/** The package's entry points (package.json "exports") and their sources. */
const ENTRIES = {
  index: 'src/index.ts',
  node: 'src/node.ts',
  'ai-sdk': 'src/adapters/ai-sdk.ts',
  'openai-agents': 'src/adapters/openai-agents.ts',
  inspect: 'src/adapters/inspect.ts',
  testing: 'src/testing/index.ts',
  'testing-scenarios': 'src/testing/scenarios.ts',
  'testing-node': 'src/testing/node.ts',
  'testing-ai-sdk': 'src/testing/ai-sdk.ts',
  'testing-openai-agents': 'src/testing/openai-agents.ts',
  'testing-langgraph': 'src/testing/langgraph.ts',
  postgres: 'src/adapters/postgres.ts',
  guard: 'src/guard/index.ts',
  langgraph: 'src/adapters/langgraph.ts',
}

/**
 * The sources' declarations (`.d.ts`, one per source file), emitted by one TypeScript program into
 * a temp directory removed when the build ends; returns the entry points' declarations there, which
 * tsup bundles into `<entry>.d.ts` and `.d.cts` (with .d.ts entries it compiles nothing itself).
 * Emitted with `noCheck`: the same declarations without the full type check (`npm run typecheck`
 * does that). The whole build takes ~12 s of CPU this way; tsup's own declaration build, which
 * emits each file through rollup with a checked program, made it ~27 s (most of `npm pack`).
 */
function declarations(): Record<string, string> {
  const config = ts.getParsedCommandLineOfConfigFile('tsconfig.json', undefined, {
    ...ts.sys,
    onUnRecoverableConfigFileDiagnostic: (diagnostic) => {
      throw new Error(ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n'))
    },
  })!
  const dir = mkdtempSync(join(tmpdir(), 'plan-mode-declarations-'))
  process.once('exit', () => rmSync(dir, { recursive: true, force: true }))
  const program = ts.createProgram(
    Object.values(ENTRIES).map((source) => resolve(source)),
    { ...config.options, noEmit: false, declaration: true, emitDeclarationOnly: true, noCheck: true, declarationMap: false, outDir: dir, rootDir: resolve('src') },
  )
  const { diagnostics, emitSkipped } = program.emit()
  if (emitSkipped || diagnostics.length > 0) {
    throw new Error(`declarations: ${ts.formatDiagnostics(diagnostics, { getCanonicalFileName: (name) => name, getCurrentDirectory: ts.sys.getCurrentDirectory, getNewLine: () => '\n' })}`)
  }
  return Object.fromEntries(Object.entries(ENTRIES).map(([name, source]) => [name, join(dir, source.slice('src/'.length).replace(/\.ts$/, '.d.ts'))]))
}

/**
 * R170: the OpenAI Agents SDK is an optional peer, loaded when its entry points are imported, in
 * the host's module system: `src/adapters/openai-agents-sdk.ts` awaits `import()` (top-level
 * await, ESM only); the CommonJS build takes `openai-agents-sdk.cjs.ts`, which `require`s it.
 */
const commonJsOpenAiAgentsSdk: NonNullable<Options['esbuildPlugins']>[number] = {
  name: 'openai-agents-sdk-cjs',
  setup(build) {
    if (build.initialOptions.format !== 'cjs') return
    build.onResolve({ filter: /\/openai-agents-sdk\.js$/ }, (args) => ({ path: resolve(args.resolveDir, args.path.replace(/\.js$/, '.cjs.ts')) }))
  },
}

/**
 * The CLI's bundle loads elkjs (the visualizer's server lays its charts out, R178) from the file
 * elkjs ships, copied beside the bundle as `elk.cjs` (onSuccess below), rather than re-printed into
 * a chunk twice its size (3.4 MB against 1.6 MB).
 */
const elkBesideTheBundle: NonNullable<Options['esbuildPlugins']>[number] = {
  name: 'elk-beside-the-bundle',
  setup(build) {
    build.onResolve({ filter: /^elkjs\/lib\/elk\.bundled\.js$/ }, () => ({ path: './elk.cjs', external: true }))
  },
}

// `tsup --out-dir <dir>` builds the whole package into <dir> (test/pack.test.ts packs a build it
// made apart from dist/, which other work may be reading); the default is dist/.
export default defineConfig(({ outDir = 'dist' }): Options[] => [
  {
    entry: ENTRIES,
    format: ['esm', 'cjs'],
    dts: { entry: declarations() },
    // No source maps: a shipped map sends a user's stack trace (the kit's assertion failures
    // included) into src/ files the package does not hold; the bundles are readable as they are.
    sourcemap: false,
    clean: true,
    target: 'node20',
    // Keep `node:` on built-in imports: `node:test` (the kit's node:test wrapper) exists only so.
    removeNodeProtocol: false,
    // import.meta.url in the CommonJS builds (the inspect entry loads its optional peers from where it is installed).
    shims: true,
    // Peers are the host's own copies.
    external: ['ai', 'vitest', 'xstate', '@statelyai/inspect', 'ws', 'pg', '@electric-sql/pglite', /^@langchain\//, '@openai/agents-core'],
    esbuildPlugins: [commonJsOpenAiAgentsSdk],
  },
  {
    // The CLI is an app beside the library: it imports the package by its name, which Node
    // resolves through package.json "exports" (a self-reference) to the bundles above.
    entry: { cli: 'apps/cli/bin.ts' },
    format: ['esm'],
    sourcemap: false,
    clean: false,
    target: 'node20',
    external: [/^xstate-plan-mode(\/.*)?$/, 'ai', 'ai/test', 'vitest', 'xstate', '@statelyai/inspect', 'ws', 'typescript'],
    // elkjs ships in the package (users do not install it): loaded on the visualizer's first chart layout.
    esbuildPlugins: [elkBesideTheBundle],
    async onSuccess() {
      await copyFile(createRequire(import.meta.url).resolve('elkjs/lib/elk.bundled.js'), `${outDir}/elk.cjs`)
      // The visualizer page, prebuilt: users do not have typescript at run time. It loads no elkjs.
      const ts = (await import('typescript')).default
      const from = 'apps/shared/visualizer/client/'
      const to = `${outDir}/visualizer-client/`
      await mkdir(to, { recursive: true })
      for (const name of await readdir(from)) {
        if (name.endsWith('.ts')) {
          const source = await readFile(`${from}${name}`, 'utf8')
          const { outputText } = ts.transpileModule(source, {
            fileName: name,
            compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 },
          })
          await writeFile(`${to}${name.slice(0, -3)}.js`, outputText)
        } else if (name.endsWith('.html') || name.endsWith('.css')) {
          await copyFile(`${from}${name}`, `${to}${name}`)
        }
      }
    },
  },
])
