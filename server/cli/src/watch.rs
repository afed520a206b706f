//! `tpulint check --watch`: check, then re-check whenever a checked file, a new Python file or
//! a configuration file (also one created in the working directory or above) changes, until
//! interrupted. Changes are found by polling modification
//! times and sizes (no platform file-notification API, so it works the same on every system and
//! over network file systems); rediscovery on every poll picks up new and deleted files.

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use crate::check::{self, CheckArgs};
use crate::output::{self, ExitStatus};

/// How often the file tree is polled.
const POLL_INTERVAL: Duration = Duration::from_millis(500);

/// A file's modification time and size.
type Stamp = (Option<SystemTime>, u64);

pub fn run(args: &CheckArgs) -> Result<ExitStatus, String> {
    if args.reads_stdin() {
        return Err("--watch re-reads files when they change; it cannot read stdin".into());
    }
    let clear = std::io::stdout().is_terminal() && args.output_file.is_none();
    output::stderr("Starting tpulint in watch mode; press Ctrl-C to stop.\n");
    loop {
        if clear {
            // Clear the screen and move home, so each report starts at the top.
            output::stdout("\x1b[2J\x1b[H");
        }
        // Stamped before the check, so a save during it is not missed (with --fix the check's
        // own writes cause one more, quiet, round).
        let before = snapshot(args);
        if let Err(message) = check::run_once(args) {
            output::error(&message);
        }
        output::stderr("Watching for file changes.\n");
        loop {
            std::thread::sleep(POLL_INTERVAL);
            if snapshot(args) != before {
                // Let an editor finish writing (save = truncate + write) before reading.
                std::thread::sleep(POLL_INTERVAL / 5);
                output::stderr("File change detected; checking again.\n");
                break;
            }
        }
    }
}

/// Every file a check would read, and every configuration file governing them, with stamps.
fn snapshot(args: &CheckArgs) -> BTreeMap<PathBuf, Stamp> {
    let mut stamps = BTreeMap::new();
    let Ok((working_directory, resolver)) = check::setup(args) else {
        return stamps;
    };
    let discovery = tpulint_workspace::discover_files(
        &args.paths(),
        &working_directory,
        &resolver,
        rayon::current_num_threads(),
    );
    let mut paths: Vec<PathBuf> = discovery
        .files
        .iter()
        .map(|file| file.path.clone())
        .collect();
    paths.extend(
        discovery
            .files
            .iter()
            .filter_map(|file| file.project.config_file.clone()),
    );
    paths.extend(args.config.iter().cloned());
    // A configuration file created in the working directory or above it (absent files stamp
    // as `(None, 0)`, so their creation is a change).
    for directory in working_directory.ancestors() {
        for name in tpulint_workspace::config::CONFIG_FILE_NAMES {
            paths.push(directory.join(name));
        }
    }
    for error in &discovery.config_errors {
        paths.push(error.path.clone());
    }
    for path in paths {
        let stamp = std::fs::metadata(&path)
            .map(|metadata| (metadata.modified().ok(), metadata.len()))
            .unwrap_or((None, 0));
        stamps.insert(path, stamp);
    }
    stamps
}
