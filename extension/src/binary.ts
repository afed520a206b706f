/**
 * Finds the `tpulint` executable to run as the language server.
 *
 * The order, first usable wins:
 * 1. the `tpulint.server.path` setting, in a trusted workspace only (a workspace could otherwise
 *    point it at a program of its own);
 * 2. with `tpulint.importStrategy: fromEnvironment`, in a trusted workspace only, the `tpulint`
 *    installed in the selected Python interpreter's environment (`pip install tpulint` puts it
 *    next to the interpreter: `bin/` of a virtual environment, `Scripts\` on Windows), so the
 *    editor runs the version the project pins, as CI and pre-commit do; then `tpulint` on `PATH`;
 * 3. the binary bundled in the platform-specific VSIX, `extension/bin/tpulint`;
 * 4. `tpulint` on `PATH`, in a trusted workspace only.
 *
 * This is ruff-vscode's order; as there, `useBundled` (the default) prefers the bundled binary,
 * and an untrusted workspace runs nothing but the bundled binary.
 *
 * A candidate that is set but unusable (missing, a folder, not executable) is recorded and the
 * next one is tried, so the error shown when none works lists every place that was looked at.
 * This module does no I/O of its own: the caller passes the file-system probe, so the unit tests
 * cover every branch without a real file system.
 */
import * as path from 'node:path';
import { serverExecutableName } from './constants';
import type { ImportStrategy } from './settings';

export type BinarySource = 'setting' | 'environment' | 'bundled' | 'path';

/** One place that was looked at, and what was found there. */
export interface BinaryAttempt {
  source: BinarySource;
  /** Absent when there was nothing to look at (setting empty, `PATH` unset). */
  path?: string;
  outcome: 'found' | 'not set' | 'missing' | 'not executable' | 'skipped in untrusted workspace';
}

export type BinaryResolution =
  | { ok: true; path: string; source: BinarySource; attempts: BinaryAttempt[] }
  | { ok: false; attempts: BinaryAttempt[] };

/** What a candidate path turned out to be. */
export type FileProbe = (candidate: string) => 'executable' | 'missing' | 'not executable';

export interface BinaryLookup {
  /** Value of `tpulint.server.path` (may be empty). */
  settingPath: string;
  /** Value of `tpulint.importStrategy`. */
  importStrategy: ImportStrategy;
  /** The selected Python interpreter (for `fromEnvironment`), when there is one. */
  interpreter: string | undefined;
  workspaceTrusted: boolean;
  /** Absolute path of the bundled binary. */
  bundledPath: string;
  /** Value of the `PATH` environment variable. */
  pathEnv: string | undefined;
  platform: NodeJS.Platform;
  /** Home directory, for a setting starting with `~/`. */
  homeDir: string;
  /** First workspace folder, against which a relative setting is resolved. */
  workspaceFolder: string | undefined;
  probe: FileProbe;
}

export function resolveServerBinary(lookup: BinaryLookup): BinaryResolution {
  const attempts: BinaryAttempt[] = [];
  const tryPath = (source: BinarySource, candidate: string): BinaryResolution | undefined => {
    const outcome = lookup.probe(candidate);
    if (outcome === 'executable') {
      attempts.push({ source, path: candidate, outcome: 'found' });
      return { ok: true, path: candidate, source, attempts };
    }
    attempts.push({ source, path: candidate, outcome });
    return undefined;
  };

  const setting = lookup.settingPath.trim();
  if (!setting) {
    attempts.push({ source: 'setting', outcome: 'not set' });
  } else if (!lookup.workspaceTrusted) {
    attempts.push({ source: 'setting', path: setting, outcome: 'skipped in untrusted workspace' });
  } else {
    const found = tryPath('setting', expandSettingPath(setting, lookup));
    if (found) return found;
  }

  const fromEnvironment = lookup.importStrategy === 'fromEnvironment';
  if (fromEnvironment && !lookup.workspaceTrusted) {
    attempts.push({ source: 'environment', outcome: 'skipped in untrusted workspace' });
  } else if (fromEnvironment) {
    const candidates = environmentBinaryCandidates(lookup.interpreter, lookup.platform);
    if (candidates.length === 0) attempts.push({ source: 'environment', outcome: 'not set' });
    for (const candidate of candidates) {
      const found = tryPath('environment', candidate);
      if (found) return found;
    }
    const onPath = searchPath(lookup, attempts);
    if (onPath) return onPath;
  }

  const bundled = tryPath('bundled', lookup.bundledPath);
  if (bundled) return bundled;

  if (!lookup.workspaceTrusted) {
    attempts.push({ source: 'path', outcome: 'skipped in untrusted workspace' });
    return { ok: false, attempts };
  }
  if (!fromEnvironment) {
    const onPath = searchPath(lookup, attempts);
    if (onPath) return onPath;
  }
  return { ok: false, attempts };
}

/** Where `pip install tpulint` puts the executable for the environment of `interpreter`: the
 * interpreter's own directory (`bin/` of a virtual environment or conda environment on POSIX,
 * `Scripts\` of a Windows virtual environment), and on Windows also `Scripts\` beside a base or
 * conda interpreter. The interpreter path is not resolved: a virtual environment's `python` is
 * a symbolic link to the base interpreter, whose directory holds a different `tpulint`. */
export function environmentBinaryCandidates(interpreter: string | undefined, platform: NodeJS.Platform): string[] {
  const trimmed = interpreter?.trim();
  if (!trimmed) return [];
  const pathModule = platform === 'win32' ? path.win32 : path.posix;
  const directory = pathModule.dirname(trimmed);
  const executable = serverExecutableName(platform);
  const candidates = [pathModule.join(directory, executable)];
  if (platform === 'win32' && pathModule.basename(directory).toLowerCase() !== 'scripts') {
    candidates.push(pathModule.join(directory, 'Scripts', executable));
  }
  return candidates;
}

/** The first `tpulint` on `PATH`, recording the search in `attempts`. */
function searchPath(lookup: BinaryLookup, attempts: BinaryAttempt[]): BinaryResolution | undefined {
  const directories = (lookup.pathEnv ?? '')
    .split(lookup.platform === 'win32' ? ';' : ':')
    .filter((directory) => directory.length > 0);
  if (directories.length === 0) {
    attempts.push({ source: 'path', outcome: 'not set' });
    return undefined;
  }
  const executable = serverExecutableName(lookup.platform);
  const pathModule = lookup.platform === 'win32' ? path.win32 : path.posix;
  for (const directory of directories) {
    const candidate = pathModule.join(directory, executable);
    if (lookup.probe(candidate) === 'executable') {
      attempts.push({ source: 'path', path: candidate, outcome: 'found' });
      return { ok: true, path: candidate, source: 'path', attempts };
    }
  }
  attempts.push({ source: 'path', path: `${executable} on PATH`, outcome: 'missing' });
  return undefined;
}

/** `~/x` → home-relative, relative paths → against the first workspace folder. */
export function expandSettingPath(setting: string, lookup: Pick<BinaryLookup, 'homeDir' | 'workspaceFolder' | 'platform'>): string {
  const pathModule = lookup.platform === 'win32' ? path.win32 : path.posix;
  if (setting === '~' || setting.startsWith('~/')) {
    return pathModule.join(lookup.homeDir, setting.slice(1));
  }
  if (!pathModule.isAbsolute(setting) && lookup.workspaceFolder) {
    return pathModule.resolve(lookup.workspaceFolder, setting);
  }
  return setting;
}

const SOURCE_LABELS: Record<BinarySource, string> = {
  setting: '`tpulint.server.path` setting',
  environment: "the selected Python interpreter's environment (`tpulint.importStrategy`)",
  bundled: 'binary bundled with the extension',
  path: '`PATH`',
};

/** Where a binary came from, in words, for the log. */
export function describeSource(source: BinarySource): string {
  return SOURCE_LABELS[source];
}

/** One line per attempt, for the error message and the log. */
export function describeAttempts(attempts: BinaryAttempt[]): string[] {
  return attempts.map((attempt) => {
    const where = attempt.path ? ` (${attempt.path})` : '';
    return `${SOURCE_LABELS[attempt.source]}${where}: ${attempt.outcome}`;
  });
}

/** A warning worth showing even when another candidate worked: the user set a path (or asked
 * for the environment's tpulint) that is unusable, so the server that runs is not the one they
 * asked for. */
export function ignoredSettingWarning(resolution: BinaryResolution): string | undefined {
  return ignoredPathWarning(resolution) ?? ignoredEnvironmentWarning(resolution);
}

function ignoredEnvironmentWarning(resolution: BinaryResolution): string | undefined {
  if (resolution.ok && resolution.source === 'environment') return undefined;
  const tried = resolution.attempts.filter((attempt) => attempt.source === 'environment');
  if (tried.length === 0) return undefined;
  const using = resolution.ok ? ` Using ${resolution.path} instead.` : '';
  if (tried[0].outcome === 'skipped in untrusted workspace') {
    return `tpulint.importStrategy "fromEnvironment" is ignored because this workspace is not trusted.${using}`;
  }
  if (tried[0].outcome === 'not set') {
    return `tpulint.importStrategy is "fromEnvironment" but no Python interpreter is selected.${using}`;
  }
  const where = tried.map((attempt) => attempt.path).join(' or ');
  return `tpulint.importStrategy is "fromEnvironment" but the selected environment has no tpulint (${where}); install it there with \`pip install tpulint\`.${using}`;
}

function ignoredPathWarning(resolution: BinaryResolution): string | undefined {
  const setting = resolution.attempts.find((attempt) => attempt.source === 'setting');
  if (!setting || setting.outcome === 'found' || setting.outcome === 'not set') return undefined;
  if (setting.outcome === 'skipped in untrusted workspace') {
    return `tpulint.server.path is ignored because this workspace is not trusted; using the bundled server.`;
  }
  const using = resolution.ok ? ` Using ${resolution.path} instead.` : '';
  return `tpulint.server.path (${setting.path}) is ${setting.outcome}.${using}`;
}
