import type { Plugin } from 'vite'

/** Where the record of a build's sources goes, in its output directory. */
export declare const SOURCES_FILE: string
/** The vite plugin that records the files a build read, with their hashes (R111). */
export declare function recordSources(): Plugin
/** Whether `outDir` holds a build whose recorded sources all hash as they do now (R111). */
export declare function isCurrent(outDir: string): Promise<boolean>
