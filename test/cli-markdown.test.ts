/**
 * The terminal markdown renderer that shows plans under review: the same layout with and without
 * colours; only the styling differs (and code spans keep their backticks when plain).
 */
import { describe, expect, it } from 'vitest'
import { renderInline, renderMarkdown } from '../apps/cli/markdown.js'

const ESC = '\u001b['
const bold = (text: string) => `${ESC}1m${text}${ESC}22m`
const dim = (text: string) => `${ESC}2m${text}${ESC}22m`
const italic = (text: string) => `${ESC}3m${text}${ESC}23m`
const cyan = (text: string) => `${ESC}36m${text}${ESC}39m`

const PLAN = [
  '',
  '# Add `--json` to the *report*',
  '',
  '',
  'Read **`src/report.ts`** first; see [the docs](https://example.com/docs "Docs").',
  '',
  '## Steps ##',
  '1. Parse the flag.',
  '2) Print with `JSON.stringify`.',
  '   - a nested *item*',
  '* a bullet with __bold__ and _emphasis_',
  '+ snake_case_name and 2 * 3 * 4 stay as they are',
  '> a **quoted** note',
  '---',
  '```ts',
  'const x = `**not bold**`',
  '',
  '',
  '# not a heading',
  '```',
  'Escaped \\*stars\\* and \\`ticks\\`.',
  '',
  '',
].join('\n')

describe('renderMarkdown', () => {
  it('plain: headings, lists, quotes, rules and code keep their layout; markers go, code spans keep backticks', () => {
    expect(renderMarkdown(PLAN, false)).toEqual([
      'Add `--json` to the report',
      '',
      'Read `src/report.ts` first; see the docs (https://example.com/docs).',
      '',
      'Steps',
      '1. Parse the flag.',
      '2) Print with `JSON.stringify`.',
      '   • a nested item',
      '• a bullet with bold and emphasis',
      '• snake_case_name and 2 * 3 * 4 stay as they are',
      '│ a quoted note',
      '────────────────────────────────────────',
      '    const x = `**not bold**`',
      '',
      '',
      '    # not a heading',
      'Escaped *stars* and `ticks`.',
    ])
  })

  it('coloured: bold headings and strong text, italic emphasis, cyan code, dim links, quotes and rules', () => {
    expect(renderMarkdown(PLAN, true)).toEqual([
      bold(`Add ${cyan('--json')} to the ${italic('report')}`),
      '',
      `Read ${bold(cyan('src/report.ts'))} first; see the docs ${dim('(https://example.com/docs)')}.`,
      '',
      bold('Steps'),
      '1. Parse the flag.',
      `2) Print with ${cyan('JSON.stringify')}.`,
      `   • a nested ${italic('item')}`,
      `• a bullet with ${bold('bold')} and ${italic('emphasis')}`,
      '• snake_case_name and 2 * 3 * 4 stay as they are',
      `${dim('│')} a ${bold('quoted')} note`,
      dim('─'.repeat(40)),
      `    ${cyan('const x = `**not bold**`')}`,
      '',
      '',
      `    ${cyan('# not a heading')}`,
      'Escaped *stars* and `ticks`.',
    ])
  })

  it('a heading stays bold after strong text inside it', () => {
    expect(renderMarkdown('# A **strong** title', true)).toEqual([`${ESC}1mA ${ESC}1mstrong${ESC}22m${ESC}1m title${ESC}22m`])
  })

  it('reads CRLF line ends, an unclosed fence as code to the end, and a heading without text as a blank', () => {
    expect(renderMarkdown('# T\r\n\r\n#\r\n~~~\r\n*a*\r\n', false)).toEqual(['T', '', '    *a*'])
  })

  it('a fence of backticks with a backtick in its info string is text, not a fence (CommonMark)', () => {
    expect(renderMarkdown('``` a`b\ntext', false)).toEqual(['``` a`b', 'text'])
  })
})

describe('renderInline', () => {
  it('strips one space on each side of a code span, and reads double-backtick spans', () => {
    expect(renderInline('`` a `tick` ``', false)).toBe('`a `tick``')
    expect(renderInline('`` a `tick` ``', true)).toBe(cyan('a `tick`'))
  })

  it('leaves a lone marker and an autolink as text', () => {
    expect(renderInline('5 * 3 and <https://example.com>', false)).toBe('5 * 3 and https://example.com')
  })
})
