// Types of scripts/prom-series.mjs, for the tests that import it.
export interface Sample {
  readonly name: string;
  readonly labels: [string, string][];
  readonly value: string;
}
export interface Scrape {
  readonly atMs: number;
  /** Undefined: the scrape failed. */
  readonly text: string | undefined;
}
export interface InputSeries {
  readonly series: string;
  readonly values: string;
}
export function parseExposition(text: string): Sample[];
export function seriesName(name: string, labels: readonly [string, string][]): string;
export function toInputSeries(
  scrapes: readonly Scrape[],
  o: { intervalMs: number; labels: [string, string][]; keep?: (name: string) => boolean },
): InputSeries[];
export function scrapeFor(
  url: string,
  o: { everyMs: number; forMs: number; headers?: Record<string, string>; onScrape?: (n: number) => void },
): Promise<Scrape[]>;
export function inputSeriesYaml(series: readonly InputSeries[], indent: number): string;
