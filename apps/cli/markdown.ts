/**
 * A small markdown renderer for the terminal, enough for the plans a model presents: ATX
 * headings, bullet and numbered lists, fenced code, block quotes, rules, emphasis, code spans and
 * links. Lines are kept as the author broke them (the terminal wraps); nothing is reflowed.
 *
 * The layout is the same with and without colours, so a plain transcript reads like the coloured
 * one: markers are replaced (`-` → `•`, `>` → `│`, fences → an indented block), emphasis markers
 * are dropped and only the styling differs. Code spans are the exception: without colours they
 * keep their backticks, the only thing that still marks them as code.
 */
import { styles as makeStyles } from './io.js'

const RULE_WIDTH = 40
const FENCE = /^ {0,3}(`{3,}|~{3,})(.*)$/
const HEADING = /^ {0,3}#{1,6}[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$/
const EMPTY_HEADING = /^ {0,3}#{1,6}[ \t]*$/
const RULE = /^ {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$/
const QUOTE = /^ {0,3}>[ \t]?(.*)$/
const BULLET = /^([ \t]*)[-*+][ \t]+(.*)$/
const NUMBERED = /^([ \t]*)(\d{1,9})([.)])[ \t]+(.*)$/

/**
 * Renders `markdown` for a terminal.
 * @param color style with ANSI codes (bold headings, cyan code, dim quotes and rules); without,
 *   plain text with the same layout.
 * @returns the rendered lines, without line breaks; runs of blank lines outside code are
 *   collapsed into one, and leading and trailing blank lines are dropped.
 */
export function renderMarkdown(markdown: string, color: boolean): string[] {
  const s = makeStyles(color)
  const inline = (text: string) => renderInline(text, color)
  const out: string[] = []
  let fence: { marker: string } | undefined

  for (const line of markdown.replace(/\r\n?/g, '\n').split('\n')) {
    if (fence) {
      const closing = FENCE.exec(line)
      if (closing && closing[1]![0] === fence.marker[0] && closing[1]!.length >= fence.marker.length && closing[2]!.trim() === '') {
        fence = undefined
      } else {
        out.push(line.trim() === '' ? '' : `    ${s.cyan(line)}`) // blank lines of code are kept
      }
      continue
    }
    const opening = FENCE.exec(line)
    if (opening && !(opening[1]![0] === '`' && opening[2]!.includes('`'))) {
      fence = { marker: opening[1]! }
      continue
    }
    let match: RegExpExecArray | null
    if (line.trim() === '' || EMPTY_HEADING.test(line)) {
      if (out.length > 0 && out[out.length - 1] !== '') out.push('')
    } else if ((match = HEADING.exec(line))) out.push(s.bold(keepBold(inline(match[1]!))))
    else if (RULE.test(line)) out.push(s.dim('─'.repeat(RULE_WIDTH)))
    else if ((match = QUOTE.exec(line))) out.push(`${s.dim('│')} ${inline(match[1]!)}`)
    else if ((match = BULLET.exec(line))) out.push(`${match[1]}• ${inline(match[2]!)}`)
    else if ((match = NUMBERED.exec(line))) out.push(`${match[1]}${match[2]}${match[3]} ${inline(match[4]!)}`)
    else out.push(inline(line.trimEnd()))
  }
  while (out[out.length - 1] === '') out.pop()
  return out
}

/**
 * Renders the inline markdown of one line: code spans, backslash escapes, links, bold, italic.
 * One left-to-right pass first takes out escapes and code spans (whichever starts first wins, so
 * an escaped backtick opens no span and nothing inside a span is markdown); they wait in private
 * use characters while emphasis and links are read, and come back rendered.
 */
export function renderInline(text: string, color: boolean): string {
  const s = makeStyles(color)
  const literals: string[] = []
  const hold = (rendered: string) => String.fromCharCode(PLACEHOLDER_BASE + literals.push(rendered) - 1)
  const held = text.replace(/\\([\\`*_{}[\]()#+\-.!>~|])|(`+)([^`]|[^`][\s\S]*?[^`])\2(?!`)/g, (_, escaped?: string, _ticks?: string, code?: string) => {
    if (escaped !== undefined) return hold(escaped)
    let content = code!
    if (content.length > 1 && content.startsWith(' ') && content.endsWith(' ') && content.trim() !== '') content = content.slice(1, -1)
    return hold(color ? s.cyan(content) : `\`${content}\``)
  })
  const rendered = held
    .replace(/!?\[([^\]]+)\]\(([^)\s]+)(?:[ \t]+"[^"]*")?\)/g, (_, label: string, url: string) => `${label} ${s.dim(`(${url})`)}`)
    .replace(/<((?:https?|mailto):[^>\s]+)>/g, (_, url: string) => url)
    .replace(/\*\*(?=\S)([\s\S]*?\S)\*\*/g, (_, inner: string) => s.bold(inner))
    .replace(/(?<!\w)__(?=\S)([\s\S]*?\S)__(?!\w)/g, (_, inner: string) => s.bold(inner))
    .replace(/(?<![\w*])\*(?=[^\s*])([^*]*?[^\s*])\*(?![\w*])/g, (_, inner: string) => s.italic(inner))
    .replace(/(?<![\w_])_(?=[^\s_])([^_]*?[^\s_])_(?![\w_])/g, (_, inner: string) => s.italic(inner))
  return rendered.replace(PLACEHOLDERS, (char) => literals[char.charCodeAt(0) - PLACEHOLDER_BASE] ?? char)
}

/** Inside bold text, every "normal intensity" (the end of a nested bold or dim) turns bold back on. */
function keepBold(styled: string): string {
  return styled.replaceAll(NORMAL_INTENSITY, `${NORMAL_INTENSITY}\u001b[1m`)
}
const NORMAL_INTENSITY = '\u001b[22m'

/** Held escapes and code spans live in the private use area while the markers are read. */
const PLACEHOLDER_BASE = 0xe000
const PLACEHOLDERS = /[\ue000-\uf8ff]/g
