/**
 * The extension's settings (`tpulint.*`) and their mapping onto what the language server reads.
 *
 * The server takes a flat object, `{select, ignore, backend, unsafeFixes, logLevel}`, in
 * `initializationOptions` (wrapped as `{settings: ...}`), in `workspace/didChangeConfiguration`
 * and in answers to `workspace/configuration`. The editor's keys are grouped (`lint.select`,
 * `fix.unsafe`) the way VS Code users expect; this module is the one place that translates.
 * It does not import `vscode`: the caller passes a reader over a configuration section.
 */

export type Backend = 'auto' | 'torch_xla' | 'torchtpu';
export type LogLevel = 'error' | 'warn' | 'info' | 'debug';

export const BACKENDS: readonly Backend[] = ['auto', 'torch_xla', 'torchtpu'];
export const LOG_LEVELS: readonly LogLevel[] = ['error', 'warn', 'info', 'debug'];

/** Every `tpulint.*` setting, typed and validated. */
export interface ExtensionSettings {
  serverPath: string;
  logLevel: LogLevel;
  select: string[];
  ignore: string[];
  backend: Backend;
  unsafeFixes: boolean;
  pythonInterpreter: string;
}

/** The settings object the server reads. `select` is left out when the user set none, because
 * the server treats a present `select` as replacing the project's selection. */
export interface ServerSettings {
  select?: string[];
  ignore: string[];
  backend: Backend;
  unsafeFixes: boolean;
  logLevel: LogLevel;
}

/** Reads one key of the `tpulint` section, e.g. `get('lint.select')`. Matches
 * `WorkspaceConfiguration.get`, whose values come from user JSON and may have any type. */
export type SettingReader = (key: string) => unknown;

/** Keys (under `tpulint.`) whose change needs a new server process. */
export const RESTART_KEYS = ['server.path'] as const;
/** Keys whose change is sent to the running server. */
export const SERVER_KEYS = ['lint.select', 'lint.ignore', 'backend', 'fix.unsafe', 'server.logLevel'] as const;

export function readSettings(get: SettingReader): ExtensionSettings {
  return {
    serverPath: stringSetting(get('server.path')),
    logLevel: enumSetting(get('server.logLevel'), LOG_LEVELS, 'info'),
    select: ruleList(get('lint.select')),
    ignore: ruleList(get('lint.ignore')),
    backend: enumSetting(get('backend'), BACKENDS, 'auto'),
    unsafeFixes: get('fix.unsafe') === true,
    pythonInterpreter: stringSetting(get('python.interpreter')),
  };
}

export function toServerSettings(settings: ExtensionSettings): ServerSettings {
  const server: ServerSettings = {
    ignore: settings.ignore,
    backend: settings.backend,
    unsafeFixes: settings.unsafeFixes,
    logLevel: settings.logLevel,
  };
  if (settings.select.length > 0) {
    server.select = settings.select;
  }
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

function enumSetting<T extends string>(value: unknown, allowed: readonly T[], fallback: T): T {
  return typeof value === 'string' && (allowed as readonly string[]).includes(value) ? (value as T) : fallback;
}
