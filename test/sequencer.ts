import { relative } from 'node:path'
import { BaseSequencer, type TestSpecification } from 'vitest/node'

/**
 * How long each slow test file takes (ms, its own run beside another file on an idle 2-core
 * machine: `npx vitest run --reporter=json`, the files' `endTime - startTime`). Only the order
 * they give matters; update them when a file gets much slower or faster.
 */
export const FILE_DURATIONS: Readonly<Record<string, number>> = {
  'test/pack.test.ts': 48_000,
  'test/web-chat.test.ts': 45_000,
  'test/model.test.ts': 25_000,
  'test/web-server.test.ts': 24_000,
  'test/visualizer.test.ts': 24_000,
  'test/web-chat-reviews.test.ts': 24_000,
  'test/cli.test.ts': 21_000,
  'test/visualizer-server.test.ts': 20_000,
  'test/postgres-server.test.ts': 18_000,
  'test/properties.test.ts': 15_000,
  'test/fast-start.test.ts': 10_000,
}

/**
 * Runs the longest files first, so that two workers finish together instead of one starting the
 * longest file when the other is nearly done (the order that minimises the run's wall time is
 * close to this one). A file's duration is its entry in {@link FILE_DURATIONS}, else the last
 * run's (vitest's cache, empty in a fresh clone), else none. vitest's own order (the last run's
 * durations, else the largest file first) started `pack.test.ts`, the longest, 24th of 80 in a
 * fresh clone.
 */
export class LongestFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const byVitest = await super.sort(files)
    const root = this.ctx.config.root
    const duration = (spec: TestSpecification): number => {
      const path = relative(root, spec.moduleId).split('\\').join('/')
      return FILE_DURATIONS[path] ?? this.ctx.cache.getFileTestResults(`${spec.project.name}:${path}`)?.duration ?? 0
    }
    const rank = new Map(byVitest.map((spec, i) => [spec, i]))
    // Longest first; ties (files that ran in no time, or unknown) keep vitest's order.
    return [...byVitest].sort((a, b) => duration(b) - duration(a) || rank.get(a)! - rank.get(b)!)
  }
}
