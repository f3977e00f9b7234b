import { readdirSync, readFileSync } from 'node:fs'
import { dirname, join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'

/**
 * The shape of `src/`'s imports (issue #25): no module reaches itself through its imports, and
 * the log's readers (`src/log/`) import nothing from the chart (`src/machines/`): the log means
 * what its table says whatever chart reads it. Every import counts, `import type` too: a type
 * that crosses a floor is a dependency a reader must follow as much as a value is.
 */

const SRC = join(dirname(fileURLToPath(import.meta.url)), '../src')

/** Every `.ts` file under `dir`, as paths relative to `src/`. */
function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) return sources(path)
    return entry.name.endsWith('.ts') ? [relative(SRC, path)] : []
  })
}

/** The specifiers a module imports or re-exports, static or dynamic, with `import type` too. */
export function specifiers(text: string): string[] {
  const found: string[] = []
  const patterns = [/^\s*(?:import|export)\b[^'";]*?\bfrom\s*['"]([^'"]+)['"]/gms, /^\s*import\s*['"]([^'"]+)['"]/gm, /\bimport\(\s*['"]([^'"]+)['"]\s*\)/g]
  for (const pattern of patterns) for (const match of text.matchAll(pattern)) found.push(match[1]!)
  return found
}

/** The modules of `src/` each module imports, keyed by path relative to `src/` (`log/kinds.ts`). */
function importGraph(): Map<string, string[]> {
  const graph = new Map<string, string[]>()
  for (const file of sources(SRC)) {
    const text = readFileSync(join(SRC, file), 'utf8')
    const targets = specifiers(text)
      .filter((specifier) => specifier.startsWith('.'))
      .map((specifier) => relative(SRC, join(SRC, dirname(file), specifier)).replace(/\.js$/, '.ts'))
    graph.set(file, [...new Set(targets)])
  }
  return graph
}

/** One import path for each cycle of the graph (a strongly connected component), as `a → b → a`. */
export function cycles(graph: ReadonlyMap<string, readonly string[]>): string[] {
  // Tarjan's strongly connected components; a component of two or more modules, or one that imports itself, is a cycle.
  let index = 0
  const indices = new Map<string, number>()
  const lowest = new Map<string, number>()
  const stack: string[] = []
  const onStack = new Set<string>()
  const found: string[] = []
  const visit = (node: string): void => {
    indices.set(node, index)
    lowest.set(node, index++)
    stack.push(node)
    onStack.add(node)
    for (const next of graph.get(node) ?? []) {
      if (!indices.has(next)) {
        visit(next)
        lowest.set(node, Math.min(lowest.get(node)!, lowest.get(next)!))
      } else if (onStack.has(next)) {
        lowest.set(node, Math.min(lowest.get(node)!, indices.get(next)!))
      }
    }
    if (lowest.get(node) !== indices.get(node)) return
    const component: string[] = []
    let member: string
    do {
      member = stack.pop()!
      onStack.delete(member)
      component.push(member)
    } while (member !== node)
    if (component.length > 1 || (graph.get(node) ?? []).includes(node)) found.push(cyclePath(graph, new Set(component), node))
  }
  for (const node of [...graph.keys()].sort()) if (!indices.has(node)) visit(node)
  return found
}

/** A shortest import path from `start` back to itself within `component` (breadth first). */
function cyclePath(graph: ReadonlyMap<string, readonly string[]>, component: ReadonlySet<string>, start: string): string {
  const from = new Map<string, string>()
  const queue = [start]
  while (queue.length > 0) {
    const node = queue.shift()!
    for (const next of graph.get(node) ?? []) {
      if (!component.has(next)) continue
      if (next === start) {
        const path = [start]
        for (let at = node; at !== start; at = from.get(at)!) path.unshift(at)
        path.unshift(start)
        return path.join(' → ')
      }
      if (!from.has(next)) {
        from.set(next, node)
        queue.push(next)
      }
    }
  }
  return start
}

describe("src/'s imports (issue #25)", () => {
  const graph = importGraph()

  it('the graph is read: every module is found, and the table of kinds is imported by the checkpoint', () => {
    expect(graph.size).toBeGreaterThan(30)
    expect(graph.get('log/checkpoint.ts')).toContain('log/kinds.ts')
    expect(graph.get('index.ts')!.length).toBeGreaterThan(10)
  })

  it('finds a cycle where there is one, type imports too (a check of the check)', () => {
    expect(specifiers("import type { A } from './a.js'\nexport { B } from './b.js'\nconst c = await import('./c.js')")).toEqual(['./a.js', './b.js', './c.js'])
    const graph = new Map([
      ['types.ts', ['log/checkpoint.ts']],
      ['log/checkpoint.ts', ['log/kinds.ts']],
      ['log/kinds.ts', ['types.ts']],
      ['index.ts', ['types.ts']],
    ])
    expect(cycles(graph)).toEqual(['types.ts → log/checkpoint.ts → log/kinds.ts → types.ts'])
  })

  it('no module of src/ reaches itself through its imports', () => {
    expect(cycles(graph)).toEqual([])
  })

  it('the log (src/log/) imports only from itself: nothing from the chart (src/machines/), the service or the public types', () => {
    const outward = [...graph].flatMap(([file, targets]) =>
      file.startsWith('log/') ? targets.filter((target) => !target.startsWith('log/')).map((target) => `${file} → ${target}`) : [],
    )
    expect(outward).toEqual([])
  })

  it('the AI SDK adapter translates: besides types, it takes from src/ only the log\'s event names, the call transcript, the turn around a call and the guard (the service decides its steps and call reviews)', () => {
    const text = readFileSync(join(SRC, 'adapters/ai-sdk.ts'), 'utf8')
    const values = [...text.matchAll(/^import\s+(?!type\b)[^'"]*?\bfrom\s*['"](\.[^'"]+)['"]/gms)].map((match) => match[1]).sort()
    expect(values).toEqual(['../guard/index.js', '../log/kinds.js', '../plan/transcript.js', '../plan/turn.js'])
  })
})
