/**
 * Reads a JSONL session log read-only, for `plan-mode inspect` and `plan-mode visualize`.
 * `openJsonlSessionLog` is the writer: it takes the log's lock and cuts a torn last line. A
 * viewer must do neither, so this reader parses the lines itself, with the writer's checks and
 * its error format `<path>:<line>: <reason>`.
 */
import { readFile } from 'node:fs/promises'
import { validatePlanModeEvent } from '../log/fold.js'
import type { SessionEvent } from '../types.js'
import { CliError } from './io.js'

/** A log loaded read-only. */
export interface LoadedLogFile {
  /** The events, seq 1, 2, … in order. */
  events: SessionEvent[]
  /** The 1-based line number of a torn last line (a crash during a write) that was skipped. */
  tornLine?: number
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

/**
 * Loads a JSONL session log without writing anything (no lock, no repair). A last line without
 * its newline that is not JSON is a torn write: it is skipped and reported in `tornLine`, as the
 * writer would cut it.
 * @throws CliError `<path>: no such file` when the file is missing, and
 *   `<path>:<line>: <reason>` for a corrupt line.
 */
export async function loadLogFile(path: string): Promise<LoadedLogFile> {
  let text: string
  try {
    text = await readFile(path, 'utf8')
  } catch (error) {
    const code = (error as { code?: unknown }).code
    if (code === 'ENOENT') throw new CliError(`${path}: no such file`)
    if (code === 'EISDIR') throw new CliError(`${path}: is a directory, not a JSONL log`)
    throw new CliError(`${path}: ${error instanceof Error ? error.message : String(error)}`)
  }
  const lines = text.split('\n')
  let tornLine: number | undefined
  const last = lines.pop()! // '' when the file ends with a newline
  if (last !== '') {
    if (parsesAsJson(last)) lines.push(last)
    else tornLine = lines.length + 1
  }
  const events: SessionEvent[] = []
  for (let i = 0; i < lines.length; i++) {
    const fail = (reason: string): never => {
      throw new CliError(`${path}:${i + 1}: ${reason}`)
    }
    const line = lines[i]!
    if (line.trim() === '') fail('empty line')
    let value: unknown
    try {
      value = JSON.parse(line)
    } catch {
      fail('not valid JSON')
    }
    if (!isRecord(value)) return fail('expected an event {"seq":n,"type":"...","data":...}')
    if (value.seq !== i + 1) fail(`expected seq ${i + 1}, found ${JSON.stringify(value.seq) ?? 'none'}`)
    if (typeof value.type !== 'string') fail('"type" must be a string')
    if (!('data' in value)) fail('"data" is missing')
    const event: SessionEvent = { seq: i + 1, type: value.type as string, data: value.data }
    try {
      validatePlanModeEvent(event)
    } catch (error) {
      fail(error instanceof Error ? error.message : String(error))
    }
    events.push(event)
  }
  return tornLine === undefined ? { events } : { events, tornLine }
}

function parsesAsJson(text: string): boolean {
  try {
    JSON.parse(text)
    return true
  } catch {
    return false
  }
}
