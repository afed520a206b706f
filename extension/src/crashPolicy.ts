/**
 * When to restart a crashed server. A crash loop (a server that dies on startup, say, because of
 * a bad binary) must not spin forever or flood the user with notifications: after
 * `maxRestarts` crashes within `windowMs` the server stays down until the user restarts it.
 */
export class CrashPolicy {
  private crashTimes: number[] = [];

  constructor(
    private readonly maxRestarts = 4,
    private readonly windowMs = 3 * 60 * 1000,
  ) {}

  /** Records a crash at `now` (ms) and tells whether to restart. */
  shouldRestart(now: number): boolean {
    this.crashTimes = this.crashTimes.filter((time) => now - time < this.windowMs);
    this.crashTimes.push(now);
    return this.crashTimes.length <= this.maxRestarts;
  }

  /** A manual restart forgives earlier crashes. */
  reset(): void {
    this.crashTimes = [];
  }

  get recentCrashes(): number {
    return this.crashTimes.length;
  }
}
