import { relative } from 'node:path'
import { BaseSequencer, type TestSpecification } from 'vitest/node'

/**
 * About how long each slow test file takes in `npm test` (ms, wall time beside another file):
 * measured in a fresh clone's `npm test` on an idle 2-core machine. Only the order they give
 * matters; update them when a file gets much slower or faster.
 */
export const FILE_DURATIONS: Readonly<Record<string, number>> = {
  'test/pack.test.ts': 39_000,
  'test/model.test.ts': 21_000,
  'test/web-chat.test.ts': 19_000,
  'test/visualizer.test.ts': 16_000,
  'test/postgres-server.test.ts': 15_000,
  'test/web-chat-reviews.test.ts': 14_500,
  'test/web-server.test.ts': 11_000,
  'test/cli-chat.test.ts': 10_500,
  'test/web-main.test.ts': 9_500,
  'test/cli.test.ts': 9_500,
  'test/visualizer-server.test.ts': 8_000,
  'test/postgres.test.ts': 8_000,
  'test/fast-start.test.ts': 6_000,
  'test/conformance.postgres.test.ts': 4_700,
  'test/properties.test.ts': 3_500,
  'test/surface.test.ts': 1_500,
  'test/jsonl.test.ts': 1_500,
  'test/cli-hints.test.ts': 2_300,
}

/**
 * Runs the longest files first, so that two workers finish together instead of one starting the
 * longest file when the other is nearly done (the order that minimises the run's wall time is
 * close to this one). A file's duration is its entry in {@link FILE_DURATIONS}, else the last
 * run's (vitest's cache, empty in a fresh clone), else none. vitest's own order (the last run's
 * durations, else the largest file first) started `pack.test.ts`, one of the two longest, 24th of 80 in a
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
