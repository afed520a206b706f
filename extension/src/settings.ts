/**
 * The extension's settings (`tpulint.*`) and their mapping onto what the language server reads.
 *
 * The server takes a flat object, `{select, ignore, backend, unsafeFixes, logLevel}`, in
 * `initializationOptions` (wrapped as `{settings: ...}`), in `workspace/didChangeConfiguration`
 * and in answers to `workspace/configuration`. The editor's keys are grouped (`lint.select`,
 * `fix.unsafe`) the way VS Code users expect; this module is the one place that translates.
 *
 * Only what the user set is sent: the server layers the editor's settings over the project's
 * `[tool.tpulint]` configuration as the CLI layers flags, so a default sent as if it were a
 * choice (`backend: "auto"`) would override the project's `backend` and make the editor and CI
 * disagree. The reader therefore returns `undefined` for a key the user did not set.
 * It does not import `vscode`: the caller passes a reader over a configuration section.
 */

export type Backend = 'auto' | 'torch_xla' | 'torchtpu';
export type LogLevel = 'error' | 'warn' | 'info' | 'debug';
export type ImportStrategy = 'useBundled' | 'fromEnvironment';

export const BACKENDS: readonly Backend[] = ['auto', 'torch_xla', 'torchtpu'];
export const LOG_LEVELS: readonly LogLevel[] = ['error', 'warn', 'info', 'debug'];
export const IMPORT_STRATEGIES: readonly ImportStrategy[] = ['useBundled', 'fromEnvironment'];

/** Every `tpulint.*` setting, typed and validated. Settings the server layers over the
 * project's configuration are `undefined` when the user did not set them. */
export interface ExtensionSettings {
  serverPath: string;
  importStrategy: ImportStrategy;
  logLevel: LogLevel;
  select: string[];
  ignore: string[];
  backend: Backend | undefined;
  unsafeFixes: boolean | undefined;
  pythonInterpreter: string;
}

/** The settings object the server reads: only what the user set (`select` also only when not
 * empty, because a present `select` replaces the project's selection). `logLevel` concerns the
 * editor alone and is always sent. */
export interface ServerSettings {
  select?: string[];
  ignore?: string[];
  backend?: Backend;
  unsafeFixes?: boolean;
  logLevel: LogLevel;
}

/** Reads one key of the `tpulint` section, e.g. `get('lint.select')`: the value the user set
 * (in user, workspace or folder settings), or `undefined` when they set none, whatever the
 * package.json default. Values come from user JSON and may have any type. */
export type SettingReader = (key: string) => unknown;

/** Keys (under `tpulint.`) whose change needs a new server process. */
export const RESTART_KEYS = ['server.path', 'importStrategy'] as const;
/** Keys whose change is sent to the running server. */
export const SERVER_KEYS = ['lint.select', 'lint.ignore', 'backend', 'fix.unsafe', 'server.logLevel'] as const;

export function readSettings(get: SettingReader): ExtensionSettings {
  return {
    serverPath: stringSetting(get('server.path')),
    importStrategy: enumSetting(get('importStrategy'), IMPORT_STRATEGIES, undefined) ?? 'useBundled',
    logLevel: enumSetting(get('server.logLevel'), LOG_LEVELS, undefined) ?? 'info',
    select: ruleList(get('lint.select')),
    ignore: ruleList(get('lint.ignore')),
    backend: enumSetting(get('backend'), BACKENDS, undefined),
    unsafeFixes: typeof get('fix.unsafe') === 'boolean' ? (get('fix.unsafe') as boolean) : undefined,
    pythonInterpreter: stringSetting(get('python.interpreter')),
  };
}

export function toServerSettings(settings: ExtensionSettings): ServerSettings {
  const server: ServerSettings = { logLevel: settings.logLevel };
  if (settings.select.length > 0) server.select = settings.select;
  if (settings.ignore.length > 0) server.ignore = settings.ignore;
  if (settings.backend !== undefined) server.backend = settings.backend;
  if (settings.unsafeFixes !== undefined) server.unsafeFixes = settings.unsafeFixes;
  return server;
}

/** The `initializationOptions` of the `initialize` request. */
export function initializationOptions(settings: ExtensionSettings): { settings: ServerSettings } {
  return { settings: toServerSettings(settings) };
}

/** What a configuration change means for the running server. */
export type ConfigurationImpact = 'restart' | 'notify' | 'none';

export function configurationImpact(affects: (section: string) => boolean): ConfigurationImpact {
  if (RESTART_KEYS.some((key) => affects(`tpulint.${key}`))) return 'restart';
  if (SERVER_KEYS.some((key) => affects(`tpulint.${key}`))) return 'notify';
  return 'none';
}

function stringSetting(value: unknown): string {
  return typeof value === 'string' ? value.trim() : '';
}

/** Rule codes are upper-case in the server's registry; accept `tpu101` as typed. Drops
 * non-strings and blanks rather than failing: a typo in settings.json must not stop linting. */
function ruleList(value: unknown): string[] {
  if (!Array.isArray(value)) return [];
  return value
    .filter((item): item is string => typeof item === 'string')
    .map((item) => item.trim().toUpperCase())
    .filter((item) => item.length > 0);
}

/** `value` when it is one of `allowed`, else `fallback` (a typo is treated as not set). */
function enumSetting<T extends string, F extends T | undefined>(value: unknown, allowed: readonly T[], fallback: F): T | F {
  return typeof value === 'string' && (allowed as readonly string[]).includes(value) ? (value as T) : fallback;
}
