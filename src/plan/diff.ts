import { diffLines } from 'diff'

/** One line of a plan diff (R97): kept, added in the newer version, or removed from the older. */
export interface PlanDiffLine {
  kind: 'same' | 'added' | 'removed'
  text: string
}

/**
 * The line diff from one version of a plan to the next (R97), computed by the `diff` library's
 * line diff (Myers' algorithm): every line of both versions once, in reading order, removed
 * lines before the lines that replace them. A missing final newline is not a change.
 */
export function diffPlans(before: string, after: string): PlanDiffLine[] {
  const lines: PlanDiffLine[] = []
  for (const change of diffLines(withFinalNewline(before), withFinalNewline(after))) {
    const kind = change.added ? 'added' : change.removed ? 'removed' : 'same'
    for (const text of change.value.slice(0, -1).split('\n')) lines.push({ kind, text })
  }
  return lines
}

const PREFIX: Readonly<Record<PlanDiffLine['kind'], string>> = { same: '  ', added: '+ ', removed: '- ' }

/**
 * A diff as plain text lines (R97): `+ ` before an added line, `- ` before a removed one, two
 * spaces before a kept one; with `context`, kept lines farther than that from any change are
 * left out, each run of them shown as one `  …` line. No lines at all when nothing changed.
 */
export function formatPlanDiff(lines: readonly PlanDiffLine[], context = Infinity): string[] {
  const changed = lines.map((line) => line.kind !== 'same')
  if (!changed.includes(true)) return [] // the same plan again: nothing to show
  const near = (i: number) => {
    for (let d = -context; d <= context; d++) if (changed[i + d]) return true
    return false
  }
  const out: string[] = []
  lines.forEach((line, i) => {
    if (line.kind !== 'same' || context === Infinity || near(i)) out.push(`${PREFIX[line.kind]}${line.text}`)
    else if (out.at(-1) !== '  …') out.push('  …')
  })
  return out
}

function withFinalNewline(text: string): string {
  return text.endsWith('\n') ? text : `${text}\n`
}
