import { readdirSync, readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'

/**
 * The contract is `docs/spec.md`: every rule it defines (a line starting `- **R<n>**`) must be
 * named by the title of some `it(`/`test(`/`describe(` in a `test/**\/*.ts` file (this one aside),
 * and every rule a title names must exist in the spec. A title names R<n> when it contains `R<n>`
 * followed by a non-digit (or by the end of the title): `R12: …`, `R47, R63: …`, `(R42.3)`.
 */

const SPEC_URL = new URL('../docs/spec.md', import.meta.url)
const TEST_DIR = new URL('./', import.meta.url)
/** This file: its samples of test source are not tests, so it is not scanned. */
const THIS_FILE = new URL(import.meta.url).pathname.split('/').pop()!

/** The rule numbers `docs/spec.md` defines, in order. Reading a missing spec throws: the test fails. */
function specRules(): number[] {
  const text = readFileSync(SPEC_URL, 'utf8')
  return [...text.matchAll(/^- \*\*R(\d+)\*\*/gm)].map((m) => Number(m[1]))
}

/** The rule numbers a title names. */
function rulesNamedBy(title: string): number[] {
  return [...title.matchAll(/\bR(\d+)(?!\d)/g)].map((m) => Number(m[1]))
}

/** Skips whitespace and comments from `i`; returns the next significant index. */
function skipTrivia(src: string, i: number): number {
  for (;;) {
    while (i < src.length && /\s/.test(src[i]!)) i++
    if (src.startsWith('//', i)) {
      const end = src.indexOf('\n', i)
      i = end === -1 ? src.length : end + 1
    } else if (src.startsWith('/*', i)) {
      const end = src.indexOf('*/', i + 2)
      i = end === -1 ? src.length : end + 2
    } else {
      return i
    }
  }
}

/**
 * Reads the string literal opening at `i` ('…', "…" or `…`). Returns its text (escapes
 * resolved to the escaped character; a template's `${…}` kept as written) and the index after it.
 */
function readString(src: string, i: number): { text: string; end: number } {
  const quote = src[i]!
  let text = ''
  let j = i + 1
  while (j < src.length) {
    const c = src[j]!
    if (c === '\\') {
      text += src[j + 1] ?? ''
      j += 2
    } else if (c === quote) {
      return { text, end: j + 1 }
    } else if (quote === '`' && src.startsWith('${', j)) {
      const end = skipBalanced(src, j + 1, '{', '}')
      text += src.slice(j, end)
      j = end
    } else {
      text += c
      j++
    }
  }
  return { text, end: src.length }
}

/** Skips the bracketed group opening at `i` (strings and comments inside respected). */
function skipBalanced(src: string, i: number, open: string, close: string): number {
  let depth = 0
  let j = i
  while (j < src.length) {
    const c = src[j]!
    if (c === "'" || c === '"' || c === '`') {
      j = readString(src, j).end
      continue
    }
    if (src.startsWith('//', j) || src.startsWith('/*', j)) {
      j = skipTrivia(src, j)
      continue
    }
    if (c === open) depth++
    else if (c === close && --depth === 0) return j + 1
    j++
  }
  return src.length
}

const isQuote = (c: string | undefined) => c === "'" || c === '"' || c === '`'

/**
 * The titles of the `it`/`test`/`describe` calls in a source file, modifiers included:
 * `it.skip('…')`, `it.each(table)('…')`, `describe.each<T>([…])('…')`, `it.skipIf(cond)('…')`.
 * A title that is not a string literal is not read.
 */
function titlesIn(src: string): string[] {
  const titles: string[] = []
  for (const m of src.matchAll(/(?<![\w$.])(?:it|test|describe)\b/g)) {
    let i = m.index + m[0].length
    for (;;) {
      i = skipTrivia(src, i)
      if (src[i] === '.') {
        const name = /^\.\s*[A-Za-z_$][\w$]*/.exec(src.slice(i))
        if (!name) break
        i += name[0].length
      } else if (src[i] === '<') {
        i = skipBalanced(src, i, '<', '>')
      } else if (src[i] === '(') {
        const first = skipTrivia(src, i + 1)
        if (isQuote(src[first])) {
          titles.push(readString(src, first).text)
          break
        }
        // A modifier's own arguments (`skipIf(cond)`, `each(table)`): the title call follows.
        i = skipBalanced(src, i, '(', ')')
      } else {
        break
      }
    }
  }
  return titles
}

/** Every test title under test/, with the file it is in. */
function testTitles(): { file: string; title: string }[] {
  const files = readdirSync(TEST_DIR, { recursive: true, encoding: 'utf8' })
    .filter((file) => file.endsWith('.ts') && file !== THIS_FILE && !file.split(/[\\/]/).includes('node_modules'))
    .sort()
  return files.flatMap((file) =>
    titlesIn(readFileSync(new URL(file.replaceAll('\\', '/'), TEST_DIR), 'utf8')).map((title) => ({ file, title })),
  )
}

describe('rule coverage of docs/spec.md', () => {
  it('the title reader finds the rules named in it, test and describe titles', () => {
    const src = [
      "it('R12: a', () => {})",
      'test(`R7, R70: b ${x}`, () => {})',
      "describe.each<string>(['a'])('R3 (R42.3) c %s', () => {})",
      'it.skipIf(process.platform === "win32")(\n  "R5: d",\n  () => {},\n)',
      "foo.test('R99: not a test')",
      "it(name, () => {}) // R98: not a title",
    ].join('\n')
    expect(titlesIn(src).flatMap(rulesNamedBy)).toEqual([12, 7, 70, 3, 42, 5])
    expect(rulesNamedBy('R1–R64 and R120x')).toEqual([1, 64, 120])
  })

  it('the spec defines its rules once each', () => {
    const rules = specRules()
    expect(rules.length).toBeGreaterThan(0)
    const duplicates = rules.filter((rule, i) => rules.indexOf(rule) !== i).map((rule) => `R${rule}`)
    expect(duplicates, 'rules defined more than once in docs/spec.md').toEqual([])
  })

  it('every rule of the spec is named by a test title', () => {
    const named = new Set(testTitles().flatMap(({ title }) => rulesNamedBy(title)))
    const missing = specRules()
      .filter((rule) => !named.has(rule))
      .map((rule) => `R${rule}`)
    expect(missing, 'rules of docs/spec.md that no test title names').toEqual([])
  })

  it('every rule a test title names is defined in the spec', () => {
    const defined = new Set(specRules())
    const unknown = testTitles()
      .flatMap(({ file, title }) =>
        rulesNamedBy(title)
          .filter((rule) => !defined.has(rule))
          .map((rule) => `R${rule} in ${file}: ${title}`),
      )
    expect(unknown, 'test titles naming rules that docs/spec.md does not define').toEqual([])
  })
})
