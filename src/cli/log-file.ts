/**
 * Reads a JSONL session log read-only, for `plan-mode inspect` and `plan-mode visualize`.
 * `openJsonlSessionLog` is the writer: it takes the log's lock and cuts a torn last line. A
 * viewer must do neither, so this reader only uses the writer's parser (its checks and its error
 * format `<path>:<line>: <reason>`).
 */
import { readFile } from 'node:fs/promises'
import { parseJsonlLog } from '../adapters/jsonl.js'
import type { SessionEvent } from '../types.js'
import { CliError } from './io.js'

/** A log loaded read-only. */
export interface LoadedLogFile {
  /** The events, seq 1, 2, … in order. */
  events: SessionEvent[]
  /** The 1-based line number of a torn last line (a crash during a write) that was skipped. */
  tornLine?: number
}

/**
 * Loads a JSONL session log without writing anything (no lock, no repair). A last line without
 * its newline that is not JSON is a torn write: it is skipped and reported in `tornLine`, as the
 * writer would cut it.
 * @throws CliError `<path>: no such file` when the file is missing, and
 *   `<path>:<line>: <reason>` for a corrupt line.
 */
export async function loadLogFile(path: string): Promise<LoadedLogFile> {
  let bytes: Buffer
  try {
    bytes = await readFile(path)
  } catch (error) {
    const code = (error as { code?: unknown }).code
    if (code === 'ENOENT') throw new CliError(`${path}: no such file`)
    if (code === 'EISDIR') throw new CliError(`${path}: is a directory, not a JSONL log`)
    throw new CliError(`${path}: ${error instanceof Error ? error.message : String(error)}`)
  }
  try {
    // The writer's own parser (one home for the format); reading never cuts or locks anything.
    const { events, torn } = parseJsonlLog(path, bytes)
    return torn ? { events, tornLine: torn.line } : { events }
  } catch (error) {
    throw new CliError(error instanceof Error ? error.message : String(error))
  }
}
